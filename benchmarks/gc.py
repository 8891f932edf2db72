"""GC1: garbage collection of 1,000,000 finished workflows, and what running work feels meanwhile.

``python -m benchmarks.gc [--rows 1000000] [--batch-size 2000] [--rounds 1]``

What it does, per round, on a fresh ``bench_gc_*`` database:

1. **Bulk load** ``--rows`` finished workflows in SQL (``generate_series``): a SUCCESS
   ``workflow_status`` row each, with its ``workflow_input``, ``workflow_output`` and one
   ``operation_outputs`` checkpoint, all created in 1970 so the purge's cutoff takes exactly
   these; then ``ANALYZE``.
2. **Launch a dbos_trio executor** in this process with a queue, and run two probes, side by
   side, for ``--idle-seconds`` (idle) and then for as long as the purge runs (purge):
   * *step latency*: one workflow runs an empty step every 10 ms; each ``await step()`` (one
     checkpoint commit) is timed;
   * *claim latency*: every 20 ms a one-step workflow is enqueued on the queue; the time from
     the enqueue call to the workflow body starting (enqueue commit, worker wakeup, claim
     statement, dispatch) is timed.
3. **Purge**: ``dbos-trio gc --completed-before 2000-01-01T00:00:00Z`` runs in a subprocess
   (as an operator or a cron job would run it; the in-executor policy runs the same batches),
   and reports the rows it deleted and its own elapsed seconds: rows/s. The database is
   checked afterwards: no bulk row is left, no probe row was touched.
4. **Floor**: the same rows are loaded again and deleted by four plain ``DELETE`` statements
   in one transaction with nothing else running: what PostgreSQL itself needs for the same
   deletions and cascades on this machine, now. ``gc_vs_floor`` is the ratio of rates.

It prints one table (and writes ``benchmarks/results/<stamp>-gc.{jsonl,md}``): rows/s,
and for each probe the idle and purge median and p99 and their ratio (the target is
purge/idle <= 2 on the median; see docs/operations.md). There is no official-SDK column:
garbage collection left the official SDK's core in 3.x.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import trio

from dbos_trio import DBOS, Config
from dbos_trio._sysdb.open import BackendOptions, open_system_database

from .common import latency_metrics, server_environment
from .runner import admin_url, fresh_database

RESULTS = Path(__file__).resolve().parent / "results"
PROBE_ENQUEUE_EVERY_S = 0.02
PROBE_STEP_EVERY_S = 0.01

LOAD_SQL = """
INSERT INTO dbos.workflow_status (workflow_uuid, status, name, queue_name, executor_id,
    application_version, application_name, created_at, updated_at, completed_at,
    recovery_attempts, serialization)
SELECT 'bulk-' || i, 'SUCCESS', 'bulk_workflow', NULL, 'bulk', 'bulk-1', 'dbos-bench',
       1000 + i, 2000 + i, 2000 + i, 1, 'py_pickle'
FROM generate_series(1, %(rows)s) AS i;
INSERT INTO dbos.workflow_input (workflow_uuid, inputs, retention_timestamp)
SELECT 'bulk-' || i, 'gAWVBgAAAAAAAAApfZSGlC4=', 1000 + i FROM generate_series(1, %(rows)s) AS i;
INSERT INTO dbos.workflow_output (workflow_uuid, output, retention_timestamp)
SELECT 'bulk-' || i, 'gAVLAS4=', 2000 + i FROM generate_series(1, %(rows)s) AS i;
INSERT INTO dbos.operation_outputs (workflow_uuid, function_id, function_name, output,
    started_at_epoch_ms, completed_at_epoch_ms, retention_timestamp)
SELECT 'bulk-' || i, 1, 'bulk_step', 'gAVLAS4=', 1500 + i, 1600 + i, 1600 + i
FROM generate_series(1, %(rows)s) AS i;
"""


async def migrate(url: str) -> None:
    sysdb = await open_system_database(
        url,
        BackendOptions(
            schema="dbos", max_connections=1, run_migrations=True, use_listen_notify=True
        ),
    )
    await sysdb.close()


def bulk_load(url: str, rows: int) -> float:
    started = time.monotonic()
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.transaction():
            for statement in LOAD_SQL.strip().split(";\n"):
                if statement.strip():
                    conn.execute(statement, {"rows": rows})
        conn.execute("ANALYZE")
    return time.monotonic() - started


FLOOR_SQL = """
DELETE FROM dbos.workflow_input WHERE workflow_uuid LIKE 'bulk-%%';
DELETE FROM dbos.workflow_output WHERE workflow_uuid LIKE 'bulk-%%';
DELETE FROM dbos.operation_outputs WHERE workflow_uuid LIKE 'bulk-%%';
DELETE FROM dbos.workflow_status WHERE workflow_uuid LIKE 'bulk-%%';
"""


def floor_delete(url: str, rows: int) -> float:
    """The physical floor: the same rows deleted by PostgreSQL in one transaction of four
    plain DELETEs (same foreign-key cascades), nothing else running; seconds."""
    bulk_load(url, rows)
    started = time.monotonic()
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        for statement in FLOOR_SQL.strip().split(";\n"):
            if statement.strip():
                conn.execute(statement)
    return time.monotonic() - started


class Probes:
    """The two probes' samples, split by phase ("idle", then "purge")."""

    def __init__(self) -> None:
        self.phase = "idle"
        self.steps: dict[str, list[float]] = {"idle": [], "purge": []}
        self.claims: dict[str, list[float]] = {"idle": [], "purge": []}


async def run_round(args: argparse.Namespace, url: str) -> dict[str, Any]:
    await migrate(url)
    load_s = await trio.to_thread.run_sync(bulk_load, url, args.rows)
    print(f"loaded {args.rows} rows in {load_s:.1f} s", file=sys.stderr, flush=True)
    dbos = DBOS(
        Config(app_name="dbos-bench", database_url=url, app_version="bench-1", max_connections=10)
    )
    queue = dbos.register_queue("gc_probe", worker_concurrency=10, polling_interval_sec=1.0)
    probes = Probes()
    stop = trio.Event()
    enqueued_at: dict[str, float] = {}

    @dbos.step(name="probe_step")
    async def probe_step() -> None:
        return None

    @dbos.workflow(name="step_probe")
    async def step_probe() -> int:
        count = 0
        while not stop.is_set():
            begun = trio.current_time()
            await probe_step()
            probes.steps[probes.phase].append(trio.current_time() - begun)
            count += 1
            await trio.sleep(PROBE_STEP_EVERY_S)
        return count

    @dbos.workflow(name="claim_probe")
    async def claim_probe(key: str) -> None:
        started = enqueued_at.pop(key, None)
        if started is not None:
            probes.claims[probes.phase].append(trio.current_time() - started)

    async def enqueue_loop() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            key = f"probe-{n}"
            enqueued_at[key] = trio.current_time()
            await queue.enqueue(claim_probe, key)
            await trio.sleep(PROBE_ENQUEUE_EVERY_S)

    async with dbos.launched():
        handle = await dbos.start_workflow(step_probe)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(enqueue_loop)
            await trio.sleep(args.idle_seconds)
            probes.phase = "purge"
            command = [
                sys.executable, "-m", "dbos_trio.cli", "gc", "-s", url, "--json",
                "--completed-before", "2000-01-01T00:00:00Z",
                "--batch-size", str(args.batch_size), "--jobs", str(args.jobs),
            ]  # fmt: skip
            done = await trio.run_process(command, capture_stdout=True, capture_stderr=True)
            probes.phase = "after"
            probes.steps["after"] = []
            probes.claims["after"] = []
            stop.set()
        await handle.get_result()
    summary = json.loads(done.stdout)
    with psycopg.connect(url, autocommit=True) as conn:
        left = conn.execute(
            "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE 'bulk-%%'"
        ).fetchone()
        probes_kept = conn.execute(
            "SELECT count(*) FROM dbos.workflow_status WHERE name IN ('claim_probe', 'step_probe')"
        ).fetchone()
    assert left is not None and left[0] == 0, f"{left} bulk rows left"
    assert summary["deleted"] == args.rows, summary
    floor_s = await trio.to_thread.run_sync(floor_delete, url, args.rows)
    record: dict[str, Any] = {
        "rows": args.rows,
        "batch_size": args.batch_size,
        "jobs": args.jobs,
        "load_s": round(load_s, 2),
        "gc_s": round(summary["seconds"], 2),
        "gc_rows_per_s": round(args.rows / summary["seconds"]),
        "gc_batches": summary["batches"],
        "floor_s": round(floor_s, 2),
        "floor_rows_per_s": round(args.rows / floor_s),
        "gc_vs_floor": round((args.rows / summary["seconds"]) / (args.rows / floor_s), 2),
        "probe_rows_kept": probes_kept[0] if probes_kept else None,
    }
    for name, samples in (("step", probes.steps), ("claim", probes.claims)):
        for phase in ("idle", "purge"):
            record.update(latency_metrics(f"{name}_{phase}", samples[phase]))
            record[f"{name}_{phase}_samples"] = len(samples[phase])
        record[f"{name}_ratio_median"] = round(
            record[f"{name}_purge_ms_median"] / record[f"{name}_idle_ms_median"], 2
        )
        record[f"{name}_ratio_p99"] = round(
            record[f"{name}_purge_ms_p99"] / record[f"{name}_idle_ms_p99"], 2
        )
    return record


def table(records: list[dict[str, Any]], env: dict[str, Any]) -> str:
    lines = [
        f"GC1 garbage collection: PostgreSQL {env.get('pg_server_version')}, "
        f"synchronous_commit={env.get('pg_synchronous_commit')}, {env.get('cpu_count')} cores, "
        f"executor pool 10, queue worker concurrency 10, gc in a separate process",
        "",
        "| round | rows | batch | jobs | gc s | rows/s | floor rows/s | step idle med/p99 ms "
        "| step purge med/p99 ms | step ratio | claim idle med/p99 ms "
        "| claim purge med/p99 ms | claim ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(records, 1):
        lines.append(
            f"| {i} | {r['rows']:,} | {r['batch_size']} | {r['jobs']} | {r['gc_s']} "
            f"| {r['gc_rows_per_s']:,} | {r['floor_rows_per_s']:,} "
            f"| {r['step_idle_ms_median']:.2f} / {r['step_idle_ms_p99']:.2f} "
            f"| {r['step_purge_ms_median']:.2f} / {r['step_purge_ms_p99']:.2f} "
            f"| {r['step_ratio_median']} / {r['step_ratio_p99']} "
            f"| {r['claim_idle_ms_median']:.2f} / {r['claim_idle_ms_p99']:.2f} "
            f"| {r['claim_purge_ms_median']:.2f} / {r['claim_purge_ms_p99']:.2f} "
            f"| {r['claim_ratio_median']} / {r['claim_ratio_p99']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gc", description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--admin-url", default=None)
    parser.add_argument("--keep-databases", action="store_true")
    parser.add_argument("--no-save", action="store_true", help="write no results files")
    args = parser.parse_args(argv)
    admin = admin_url(args.admin_url)
    records = []
    env: dict[str, Any] = {}
    for _ in range(args.rounds):
        with fresh_database(admin, "GC1", "dbos_trio", args.keep_databases) as url:
            env = server_environment(url)
            records.append(trio.run(run_round, args, url))
        print(json.dumps(records[-1]), file=sys.stderr, flush=True)
    text = table(records, env)
    print(text)
    if args.no_save:
        return 0
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(RESULTS / f"{stamp}-gc.jsonl", "w") as out:
        for record in records:
            out.write(json.dumps({"scenario": "GC1", **record, "env": env}) + "\n")
    (RESULTS / f"{stamp}-gc.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
