"""Durable queues: enqueueing (by function or by name), the stored queue rows, and the
dequeue supervisor with its per-queue workers.

Layer: engine, above :mod:`dbos_trio._engine.workflows` (a claimed workflow runs through its
execution). Invariant: admission (concurrency, rate limits, partitions) is decided by the pure
rules in :mod:`dbos_trio._core.admission` and enforced by one atomic claim in the backend, so
every executor of a fleet counts the same way.
"""
