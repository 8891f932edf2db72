"""The durable primitives a workflow body calls: sleep, send/recv, events, streams, patches,
published state, bulk sends and datasource transactions.

Layer: engine, above :mod:`dbos_trio._engine.workflows` (each primitive is a checkpointed
call made through its checkpoint machinery). Invariant: a waiting primitive subscribes to its
wakeup before it reads the database, so a notification between the read and the wait is never
lost; the notification is only a hint, and a bounded re-check delivers without it.
"""
