"""Bulk-loading a system database to a given size, by SQL (the engine never sees these rows).

The G1 growth scenario (``benchmarks.growth``) measures the engine's hot paths against
tables that hold 10k, 100k and 1M finished workflows. Writing those through the engine
would take hours and measure the engine instead of the plans, so they are inserted here
with ``generate_series``, in chunks, shaped like what the engine writes:

* ids are md5-derived UUIDs (random order in the primary key, as ``uuid4`` ids are);
* ``created_at`` is spread evenly over the last 30 days, in a scrambled order, so the
  time index is not also the insertion order;
* 90 % SUCCESS, 8 % ERROR, 2 % CANCELLED; 20 workflow names; half of the rows ran on the
  queue ``growth_q`` (a quarter of those rate-limited), the others were started directly;
* ``operation_outputs`` gets ``steps`` rows per workflow (10 by default: 10M at 1M).

Every chunk is its own transaction, and the tables are analyzed after each growth, as
autovacuum would have done by the time a production table reached that size.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator
from typing import Any, Protocol

import psycopg

APP_NAME = "growth"
APP_VERSION = "growth-v1"
EXECUTOR_ID = "local"
QUEUE = "growth_q"
NAMES = 20
DAY_MS = 86_400_000
SPAN_MS = 30 * DAY_MS
CHUNK = 100_000

# Row i (1-based) of the synthetic history. The multiplier scrambles created_at across
# the 30 days without a random() call, so a rerun builds the same table.
_STATUS_ROWS = """
INSERT INTO dbos.workflow_status (
    workflow_uuid, status, name, executor_id, created_at, updated_at, application_version,
    application_name, queue_name, started_at_epoch_ms, completed_at, rate_limited, inputs,
    output, error, serialization, recovery_attempts, priority, owner_xid, creator_xid)
SELECT md5(i::text)::uuid::text,
       CASE WHEN i %% 50 < 4 THEN 'ERROR' WHEN i %% 50 = 4 THEN 'CANCELLED' ELSE 'SUCCESS' END,
       'growth_wf_' || (i %% %(names)s),
       %(executor)s,
       c.at, c.at + 100, %(version)s, %(app)s,
       CASE WHEN i %% 2 = 0 THEN %(queue)s END,
       CASE WHEN i %% 2 = 0 THEN c.at + 5 END,
       c.at + 100,
       i %% 8 = 0,
       '{"positionalArgs":[' || i || ']}',
       CASE WHEN i %% 50 >= 4 THEN '1' END,
       CASE WHEN i %% 50 < 4 THEN '{"name":"ValueError","message":"bad"}' END,
       'portable_json', 1, 0, NULL, md5(i::text || 'creator')
FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i,
     LATERAL (SELECT %(t0)s::bigint + (i * 7919) %% %(span)s::bigint AS at) AS c
"""

_OUTPUT_ROWS = """
INSERT INTO dbos.operation_outputs (
    workflow_uuid, function_id, function_name, output, serialization, started_at_epoch_ms,
    completed_at_epoch_ms, application_name)
SELECT md5(i::text)::uuid::text, s, 'growth_step', '1', 'portable_json',
       %(t0)s::bigint + (i * 7919) %% %(span)s::bigint + s,
       %(t0)s::bigint + (i * 7919) %% %(span)s::bigint + s + 1, %(app)s
FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS i,
     generate_series(1, %(steps)s) AS s
"""

_PENDING_ROWS = """
INSERT INTO dbos.workflow_status (
    workflow_uuid, status, name, executor_id, created_at, updated_at, application_version,
    application_name, inputs, serialization, recovery_attempts, priority, owner_xid,
    creator_xid)
SELECT 'rec-' || %(tag)s || '-' || i, 'PENDING', 'growth_recover', %(executor)s,
       %(now)s - i, %(now)s, %(version)s, %(app)s, '{"positionalArgs":[' || i || ']}',
       'portable_json', 1, 0, 'dead-owner', 'dead-owner'
FROM generate_series(1, %(n)s) AS i
"""


async def migrate(url: str) -> None:
    """Create the shared schema in the (empty) database at ``url``, as dbos_trio does."""
    from dbos_trio._sysdb.open import open_system_database

    sysdb = await open_system_database(url)
    await sysdb.close()


def history_start(now_ms: int) -> int:
    """Where the synthetic 30 days begin, for a run that started at ``now_ms``."""
    return now_ms - SPAN_MS - DAY_MS


def chunks(have: int, want: int, steps: int, t0: int) -> Iterator[dict[str, Any]]:
    """The parameters of the history's insert statements (either backend's), one chunk of
    at most :data:`CHUNK` rows ``have+1 .. want`` at a time."""
    first = have + 1
    while first <= want:
        last = min(want, first + CHUNK - 1)
        yield {
            "first": first,
            "last": last,
            "names": NAMES,
            "executor": EXECUTOR_ID,
            "version": APP_VERSION,
            "app": APP_NAME,
            "queue": QUEUE,
            "t0": t0,
            "span": SPAN_MS,
            "steps": steps,
        }
        first = last + 1


def pending_params(n: int, tag: str, now_ms: int) -> dict[str, Any]:
    """The parameters of the recovery probe's PENDING rows statement (either backend's)."""
    return {
        "tag": tag,
        "n": n,
        "executor": EXECUTOR_ID,
        "version": APP_VERSION,
        "app": APP_NAME,
        "now": now_ms,
    }


def grow(url: str, have: int, want: int, steps: int, t0: int) -> dict[str, Any]:
    """Insert history rows ``have+1 .. want`` (and their steps); analyze; report timings."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        for params in chunks(have, want, steps, t0):
            with conn.transaction():
                conn.execute(_STATUS_ROWS, params)
                if steps:
                    conn.execute(_OUTPUT_ROWS, params)
        loaded = time.perf_counter()
        conn.execute("VACUUM ANALYZE dbos.workflow_status")
        conn.execute("VACUUM ANALYZE dbos.operation_outputs")
        # Flush the load's dirty pages now: otherwise the checkpointer writes hundreds of
        # MB during the probes that follow, and they measure the bulk load, not the size.
        conn.execute("CHECKPOINT")
    return {
        "load_s": round(loaded - started, 2),
        "analyze_s": round(time.perf_counter() - loaded, 2),
    }


class History(Protocol):
    """What the recovery probe needs of a backend's tables, outside the engine."""

    def insert_pending(self, url: str, n: int, tag: str, now_ms: int) -> None:
        """``n`` PENDING rows of this executor whose owner died: what launch must recover
        (created one per millisecond before ``now_ms``, as a burst of starts would be)."""

    def in_flight(self, url: str) -> int:
        """How many rows are ENQUEUED or PENDING."""

    def recovered(self, url: str, tag: str) -> int:
        """How many of one recovery probe's rows ended SUCCESS."""

    def delete_recovered(self, url: str, tag: str) -> int:
        """Remove one recovery probe's rows: the next size starts from the history alone."""

    def finish_queued(self, url: str, now_ms: int) -> None:
        """The probes' enqueued and claimed rows leave the queue as finished ones, like
        the rest of the history."""


class PostgresHistory:
    """:class:`History` on PostgreSQL (``dbos`` schema)."""

    def insert_pending(self, url: str, n: int, tag: str, now_ms: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(_PENDING_ROWS, pending_params(n, tag, now_ms))

    def in_flight(self, url: str) -> int:
        return self._count(url, "status IN ('ENQUEUED', 'PENDING')", ())

    def recovered(self, url: str, tag: str) -> int:
        where = "name = 'growth_recover' AND workflow_uuid LIKE %s AND status = 'SUCCESS'"
        return self._count(url, where, (f"rec-{tag}-%",))

    def delete_recovered(self, url: str, tag: str) -> int:
        # (Their steps go with them, by cascade.)
        with psycopg.connect(url, autocommit=True) as conn:
            cur = conn.execute(
                "DELETE FROM dbos.workflow_status WHERE workflow_uuid LIKE %s", (f"rec-{tag}-%",)
            )
            return cur.rowcount

    def finish_queued(self, url: str, now_ms: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(FINISH_QUEUED.format(t="dbos.").replace("?", "%s"), (now_ms,))

    def _count(self, url: str, where: str, params: tuple[Any, ...]) -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                f"SELECT count(*) FROM dbos.workflow_status WHERE {where}", params
            ).fetchone()
        assert row is not None
        return int(row[0])


POSTGRES = PostgresHistory()

# Shared by both backends' History (SQLite's placeholder; PostgreSQL swaps it for %s).
FINISH_QUEUED = (
    "UPDATE {t}workflow_status SET status = 'SUCCESS', completed_at = ? "
    "WHERE name = 'growth_queued' AND status IN ('ENQUEUED', 'PENDING')"
)


def table_sizes(url: str) -> dict[str, Any]:
    """Row counts (exact) and on-disk sizes of the two big tables."""
    with psycopg.connect(url, autocommit=True) as conn:
        out: dict[str, Any] = {}
        for table in ("workflow_status", "operation_outputs"):
            row = conn.execute(
                f"SELECT count(*), pg_total_relation_size('dbos.{table}') FROM dbos.{table}"
            ).fetchone()
            assert row is not None
            out[f"{table}_rows"] = int(row[0])
            out[f"{table}_mb"] = round(int(row[1]) / 2**20, 1)
    return out


def history_id(i: int) -> str:
    """The id row ``i`` of the history has (the SQL's ``md5(i::text)::uuid::text``)."""
    return str(uuid.UUID(hashlib.md5(str(i).encode()).hexdigest()))
