"""A workflow body, run once: its ambient context, its options and id, the idempotent
start, steps and checkpoints, deterministic concurrency inside it, handles and outcomes.

Layer: engine. Imports the system-database protocol, ``_core`` and the foundations; of the
engine, only its own modules and :mod:`~dbos_trio._engine.observability`. Invariant: every
durable call is made through :mod:`.checkpoint` and numbered in call order (:mod:`.turns`),
so a replay meets each recorded call at the same id.
"""
