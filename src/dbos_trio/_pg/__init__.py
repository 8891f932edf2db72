"""psycopg 3 driven natively from Trio: the connection, its I/O, connecting, and a small pool.

A reusable piece with no knowledge of DBOS: psycopg's query generators are driven on the
socket with ``trio.lowlevel.wait_readable``/``wait_writable`` (no thread, no asyncio), so every
query is a Trio checkpoint that can be cancelled (see ../shared/reference/trio-postgres.md).

Layer: the backends' bottom. Imports psycopg, trio and the foundations (``_clock``, ``_redact``)
only; the PostgreSQL system-database backend (:mod:`dbos_trio._sysdb.postgres`) and the
datasources build on it. Invariant: a cancelled query leaves its connection either usable or
closed, never half-way through a protocol exchange.
"""
