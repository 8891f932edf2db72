"""P1: large payloads (issue 36) — recovery of workflows with 1 MB inputs, and listings.

``python -m benchmarks.payloads [--workflows 1000] [--input-bytes 1048576] [--rounds 1]``

What it does, per round, for the large input size inline, the large size through a
payload store (``Config.payload_store``: a ``DirectoryPayloadStore`` in a temporary
directory, threshold 64 KiB, so each row holds a ~90-byte reference), then 100 bytes
inline as the baseline, each on a fresh ``bench_p1_*`` PostgreSQL database:

1. **Load**: ``--workflows`` workflows are enqueued by a ``Client`` (portable JSON, each
   input a distinct string of the size: a unique prefix on one random base64 blob, which
   PostgreSQL cannot compress), then turned by SQL into what a crash leaves: PENDING rows
   of executor ``local``, application version ``p1``, on no queue. Not timed.
2. **Recovery**: an executor launches (timer starts before ``launched()``) and recovers
   them all: each row re-enqueued, claimed, its 1 MB input read and decoded, the workflow
   run (it returns its input's length), its outcome written. The clock stops at the first
   poll (every 20 ms, its own connection) that counts every row SUCCESS. Reported:
   seconds and workflows/s.
3. **Listing**: with the rows finished, ``list_workflows(limit=100)`` with and without
   ``load_input``, five times each (median), and one ``get_workflow_status`` whole vs with
   the faces' previews (what ``dbos-trio workflow get`` and the dashboard now read).

Every record carries the 1-minute load average before and after (the machine is shared).
Results: ``benchmarks/results/<stamp>-payloads.{jsonl,md}``. There is no official-SDK
column: the point is what payload size costs dbos_trio's recovery, against itself.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg
import trio

from dbos_trio import DBOS, Client, Config, DirectoryPayloadStore, EnqueueOptions
from dbos_trio._ops import inspect

from .common import server_environment
from .runner import admin_url, fresh_database

RESULTS = Path(__file__).resolve().parent / "results"
APP = "p1-payloads"
VERSION = "p1"
WORKFLOW = "p1_workflow"
POLL_S = 0.02


def inputs(count: int, size: int) -> list[str]:
    """``count`` distinct strings of ``size`` characters that do not compress."""
    blob = base64.b64encode(os.urandom(size)).decode("ascii")[:size]
    return [f"{i:08d}{blob[8:]}" for i in range(count)]


async def load(url: str, count: int, size: int, store: DirectoryPayloadStore | None) -> None:
    options = EnqueueOptions(
        queue_name="p1_unserved", workflow_name=WORKFLOW, serialization="portable"
    )
    async with Client(url, app_name=APP, max_value_bytes=None, payload_store=store) as client:
        for value in inputs(count, size):
            await client.enqueue(options, value)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE dbos.workflow_status SET status = 'PENDING', queue_name = NULL, "
            "executor_id = 'local', application_version = %s, application_name = %s",
            (VERSION, APP),
        )
        conn.execute("VACUUM ANALYZE dbos.workflow_status")


def succeeded(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM dbos.workflow_status WHERE status = 'SUCCESS'"
        ).fetchone()
    return int(row[0]) if row else 0


async def recover_and_list(
    url: str, count: int, store: DirectoryPayloadStore | None
) -> dict[str, Any]:
    dbos = DBOS(
        Config(
            app_name=APP,
            database_url=url,
            app_version=VERSION,
            max_value_bytes=None,
            payload_store=store,
        )
    )

    @dbos.workflow(name=WORKFLOW, serialization="portable")
    async def p1_workflow(value: str) -> int:
        return len(value)

    result: dict[str, Any] = {}
    started = time.perf_counter()
    cpu = time.process_time()
    async with dbos.launched():
        while await trio.to_thread.run_sync(succeeded, url) < count:  # noqa: ASYNC110
            await trio.sleep(POLL_S)  # observed from outside, as the other benchmarks
        result["recovery_s"] = round(time.perf_counter() - started, 3)
        result["recovery_cpu_s"] = round(time.process_time() - cpu, 3)
        result["recovered_per_s"] = round(count / result["recovery_s"], 1)
        for load_input in (False, True):
            times = []
            for _ in range(5):
                began = time.perf_counter()
                listed = await dbos.list_workflows(limit=100, load_input=load_input)
                times.append(time.perf_counter() - began)
            assert len(listed) == min(100, count)
            result[f"list100_load_input_{load_input}_ms"] = round(
                statistics.median(times) * 1000, 1
            )
        one = listed[0].workflow_id
        for previews in (False, True):
            began = time.perf_counter()
            await inspect.get_workflow_status(dbos._reach, one, previews=previews)
            result[f"status_previews_{previews}_ms"] = round(
                (time.perf_counter() - began) * 1000, 1
            )
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.payloads")
    parser.add_argument("--workflows", type=int, default=1000)
    parser.add_argument("--input-bytes", type=int, default=1024 * 1024)
    parser.add_argument("--baseline-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--admin-url", default=None)
    parser.add_argument("--keep-databases", action="store_true")
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    records = []
    admin = admin_url(args.admin_url)
    for round_no in range(1, args.rounds + 1):
        for mode, size in (
            ("inline", args.input_bytes),
            ("store", args.input_bytes),
            ("inline", args.baseline_bytes),
        ):
            directory = tempfile.mkdtemp(prefix="bench_p1_store_") if mode == "store" else None
            store = DirectoryPayloadStore(directory) if directory else None
            with fresh_database(admin, "P1", "dbos_trio", args.keep_databases) as url:
                trio.run(_migrate, url)
                began = time.perf_counter()
                trio.run(load, url, args.workflows, size, store)
                load_s = time.perf_counter() - began
                load_before = os.getloadavg()[0]
                record = {
                    "scenario": "P1",
                    "round": round_no,
                    "workflows": args.workflows,
                    "input_bytes": size,
                    "payloads": mode,
                    "load_s": round(load_s, 1),
                    "loadavg_1m_before": round(load_before, 2),
                    **trio.run(recover_and_list, url, args.workflows, store),
                    "loadavg_1m_after": round(os.getloadavg()[0], 2),
                    "environment": server_environment(url),
                }
            if directory:
                shutil.rmtree(directory)
            records.append(record)
            print(json.dumps(record), file=sys.stderr)
            with (RESULTS / f"{stamp}-payloads.jsonl").open("a") as out:
                out.write(json.dumps(record) + "\n")
    table = report(records)
    (RESULTS / f"{stamp}-payloads.md").write_text(table + "\n")
    print(table)


async def _migrate(url: str) -> None:
    """Create the schema (a launch migrates it) before the client writes."""
    async with DBOS(Config(app_name=APP, database_url=url, app_version=VERSION)).launched():
        pass


def report(records: list[dict[str, Any]]) -> str:
    lines = [
        "| input | payloads | workflows | recovery s | workflows/s | recovery CPU s "
        "| list 100 (no input) ms | list 100 (load_input) ms | status whole ms "
        "| status preview ms | load avg 1m |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['input_bytes']:,} B | {r.get('payloads', 'inline')} | {r['workflows']} "
            f"| {r['recovery_s']} "
            f"| {r['recovered_per_s']} | {r['recovery_cpu_s']} "
            f"| {r['list100_load_input_False_ms']} | {r['list100_load_input_True_ms']} "
            f"| {r['status_previews_False_ms']} | {r['status_previews_True_ms']} "
            f"| {r['loadavg_1m_before']} -> {r['loadavg_1m_after']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
