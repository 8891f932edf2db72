"""The replay sandbox of ``dbos-trio check``: recorded workflows re-run against the
application's current code, with every durable call answered from the record.

Layer: part of the engine's top (``_engine.runtime``): it runs executions as a launch
does, with a read-only sandbox in place of the system database. Invariant: a replay
writes nothing, runs no step body and nothing outside, and reads nothing but the record
it was given; time is virtual (see :mod:`.run`).
"""
