"""Cron schedules and debouncing: stored schedules, the scheduler task, the row one tick makes,
and many calls coalesced into one workflow.

Layer: engine, above :mod:`dbos_trio._engine.queues` (a tick is an enqueue). Invariant: a tick
has a deterministic workflow id, so executors of a fleet (and official SDK executors) that fire
the same tick make one workflow, never two.
"""
