"""G1 on the embedded SQLite backend (issue 21): the hot paths at 10k, 100k and 1M rows.

Usage (from the project root, the dev virtualenv active)::

    python -m benchmarks.growth_sqlite                     # 10k, 100k, 1M; 10 steps per row
    python -m benchmarks.growth_sqlite --sizes 0,10000 --steps 2 --recover 1000   # quick

The probes are G1's (:mod:`benchmarks.growth`), through the engine on a ``sqlite:///``
URL: enqueue, claim (plain and counted), ``get_workflow_status``, ``list_workflows`` with
the common filters and paging, and recovery of PENDING rows. One SQLite file (WAL, as the
backend opens it) grows in place: the history is inserted by SQL, in chunks, shaped as on
PostgreSQL (:mod:`benchmarks.growth_load`: the same ids, the same spread of times,
statuses, names and queues, ``--steps`` ``operation_outputs`` rows per workflow), then
``ANALYZE``. At every size ``EXPLAIN QUERY PLAN`` of each listing and of the claim is
recorded, so a plan that changes shape as the tables grow shows in the record. Records go
to ``benchmarks/results/<stamp>-growth-sqlite.jsonl``, the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from benchmarks import growth, growth_load
from benchmarks.growth_load import APP_NAME

# Row i (1-based) of the history, as growth_load's PostgreSQL statement makes it.
_STATUS_ROWS = """
WITH RECURSIVE n(i) AS (SELECT :first UNION ALL SELECT i + 1 FROM n WHERE i < :last)
INSERT INTO workflow_status (
    workflow_uuid, status, name, executor_id, created_at, updated_at, application_version,
    application_name, queue_name, started_at_epoch_ms, completed_at, rate_limited, inputs,
    output, error, serialization, recovery_attempts, priority, owner_xid, creator_xid)
SELECT history_id(i),
       CASE WHEN i % 50 < 4 THEN 'ERROR' WHEN i % 50 = 4 THEN 'CANCELLED' ELSE 'SUCCESS' END,
       'growth_wf_' || (i % :names), :executor, at, at + 100, :version, :app,
       CASE WHEN i % 2 = 0 THEN :queue END,
       CASE WHEN i % 2 = 0 THEN at + 5 END,
       at + 100, i % 8 = 0,
       '{"positionalArgs":[' || i || ']}',
       CASE WHEN i % 50 >= 4 THEN '1' END,
       CASE WHEN i % 50 < 4 THEN '{"name":"ValueError","message":"bad"}' END,
       'portable_json', 1, 0, NULL, history_id(i) || 'creator'
FROM (SELECT i, :t0 + (i * 7919) % :span AS at FROM n)
"""

_OUTPUT_ROWS = """
WITH RECURSIVE n(i) AS (SELECT :first UNION ALL SELECT i + 1 FROM n WHERE i < :last),
     s(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM s WHERE j < :steps)
INSERT INTO operation_outputs (
    workflow_uuid, function_id, function_name, output, serialization, started_at_epoch_ms,
    completed_at_epoch_ms, application_name)
SELECT history_id(i), j, 'growth_step', '1', 'portable_json', at + j, at + j + 1, :app
FROM (SELECT i, :t0 + (i * 7919) % :span AS at FROM n), s
"""

_PENDING_ROWS = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)
INSERT INTO workflow_status (
    workflow_uuid, status, name, executor_id, created_at, updated_at, application_version,
    application_name, inputs, serialization, recovery_attempts, priority, owner_xid,
    creator_xid)
SELECT 'rec-' || :tag || '-' || i, 'PENDING', 'growth_recover', :executor, :now - i, :now,
       :version, :app, '{"positionalArgs":[' || i || ']}', 'portable_json', 1, 0,
       'dead-owner', 'dead-owner'
FROM n
"""


def _connect(url: str) -> sqlite3.Connection:
    conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, timeout=60)
    conn.create_function("history_id", 1, growth_load.history_id, deterministic=True)
    return conn


def grow(url: str, have: int, want: int, steps: int, t0: int) -> dict[str, Any]:
    """Insert history rows ``have+1 .. want`` (and their steps); analyze; report timings."""
    started = time.perf_counter()
    conn = _connect(url)
    try:
        for params in growth_load.chunks(have, want, steps, t0):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(_STATUS_ROWS, params)
            if steps:
                conn.execute(_OUTPUT_ROWS, params)
            conn.execute("COMMIT")
        loaded = time.perf_counter()
        conn.execute("ANALYZE")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # as PostgreSQL's CHECKPOINT
    finally:
        conn.close()
    return {
        "load_s": round(loaded - started, 2),
        "analyze_s": round(time.perf_counter() - loaded, 2),
    }


class SQLiteHistory:
    """:class:`benchmarks.growth_load.History` on the SQLite file."""

    def insert_pending(self, url: str, n: int, tag: str, now_ms: int) -> None:
        self._write(url, _PENDING_ROWS, growth_load.pending_params(n, tag, now_ms))

    def in_flight(self, url: str) -> int:
        return self._count(url, "status IN ('ENQUEUED', 'PENDING')", ())

    def recovered(self, url: str, tag: str) -> int:
        where = "name = 'growth_recover' AND workflow_uuid LIKE ? AND status = 'SUCCESS'"
        return self._count(url, where, (f"rec-{tag}-%",))

    def delete_recovered(self, url: str, tag: str) -> int:
        # No cascade on SQLite (the step tables have no foreign key): steps go by hand.
        pattern = (f"rec-{tag}-%",)
        self._write(url, "DELETE FROM operation_outputs WHERE workflow_uuid LIKE ?", pattern)
        self._write(url, "DELETE FROM workflow_input WHERE workflow_uuid LIKE ?", pattern)
        self._write(url, "DELETE FROM workflow_output WHERE workflow_uuid LIKE ?", pattern)
        return self._write(url, "DELETE FROM workflow_status WHERE workflow_uuid LIKE ?", pattern)

    def finish_queued(self, url: str, now_ms: int) -> None:
        self._write(url, growth_load.FINISH_QUEUED.format(t=""), (now_ms,))

    def _write(self, url: str, sql: str, params: Any) -> int:
        conn = _connect(url)
        try:
            return conn.execute(sql, params).rowcount
        finally:
            conn.close()

    def _count(self, url: str, where: str, params: tuple[Any, ...]) -> int:
        conn = _connect(url)
        try:
            row = conn.execute(f"SELECT count(*) FROM workflow_status WHERE {where}", params)
            return int(row.fetchone()[0])
        finally:
            conn.close()


SQLITE = SQLiteHistory()


def explain(url: str, now_ms: int) -> dict[str, Any]:
    """``EXPLAIN QUERY PLAN`` of every listing and of the claim, at the file's size."""
    from dbos_trio._core.filters import normalize_filters
    from dbos_trio._sysdb.records import WorkflowFilters
    from dbos_trio._sysdb.rows import claim_params
    from dbos_trio._sysdb.sql.listing import list_workflows_query
    from dbos_trio._sysdb.sqlite.backend import SQLITE_LISTING, sqlite_statements
    from dbos_trio._sysdb.sqlite.statements import adapted_params

    plans: dict[str, Any] = {}
    conn = _connect(url)
    try:
        for label, raw in growth.LISTINGS:
            normalized = normalize_filters(growth._filters(raw, now_ms))
            normalized["scope_application"] = APP_NAME  # as the client scopes it
            sql, params = list_workflows_query(WorkflowFilters(**normalized), SQLITE_LISTING)
            plans[label] = _plan(conn, sql, params)
        params = {**claim_params(growth._claim_request(now_ms, False)), "budget": 1}
        claim = sqlite_statements()["claim"].text
        plans["claim"] = _plan(conn, claim, adapted_params(params))
    finally:
        conn.close()
    return plans


def _plan(conn: sqlite3.Connection, sql: str, params: Any) -> dict[str, Any]:
    rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    text = "\n".join(detail for _id, _parent, _unused, detail in rows)
    scans = [d for d in text.splitlines() if d.lstrip().startswith(("SCAN", "SEARCH"))]
    return {"top": "; ".join(s.strip() for s in scans), "text": text}


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    growth.RESULTS.mkdir(exist_ok=True)
    out_path = growth.RESULTS / f"{stamp}-growth-sqlite.jsonl"
    with tempfile.TemporaryDirectory(prefix="bench-growth-sqlite-", dir=args.dir) as folder:
        url = f"sqlite:///{Path(folder) / 'growth.sqlite'}"
        trio.run(growth_load.migrate, url)
        now_ms = int(time.time() * 1000)
        t0 = growth_load.history_start(now_ms)
        have = 0
        for size in args.sizes:
            record: dict[str, Any] = {
                "scenario": "G1-SQLite",
                "size": size,
                "steps_per_row": args.steps,
            }
            if size > have:
                record["load"] = grow(url, have, size, args.steps, t0)
                have = size
            print(f"[growth-sqlite] {size:>9} rows loaded; probing", file=sys.stderr, flush=True)
            record["file_mb"] = round(Path(url.removeprefix("sqlite:///")).stat().st_size / 2**20)
            record["latency"] = trio.run(growth.probe_latencies, url, size, args.samples, now_ms)
            record["explain"] = explain(url, now_ms)
            SQLITE.finish_queued(url, now_ms)
            if args.recover:
                recovery = trio.run(growth.probe_recovery, url, args.recover, f"s{size}", SQLITE)
                record["latency"].update(recovery)
            records.append(record)
            with out_path.open("a") as f:
                f.write(json.dumps(record, default=str) + "\n")
    print(f"[growth-sqlite] records in {out_path}", file=sys.stderr)
    return records


def table(records: list[dict[str, Any]], explain_all: bool = False) -> str:
    """G1's table, with the query plans' scans at the largest size."""
    last = records[-1]
    lines = [growth.table(records, plans=False), ""]
    lines.append(f"Plans at {last['size']:,} rows (EXPLAIN QUERY PLAN, scans):")
    for label, plan in last["explain"].items():
        lines.append(f"- {label}: {plan['top']}")
        if explain_all:
            lines.append("```\n" + plan["text"] + "\n```")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth_sqlite", description=__doc__)
    parser.add_argument("--dir", default=None, help="where the SQLite file goes (default: tmp)")
    args = growth.parse_args(parser, argv)
    print(table(run(args), explain_all=args.explain))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
