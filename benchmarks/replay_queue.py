"""R2 (issue 21): S4's shape replayed by pgbench — what the server allows a queue benchmark.

Usage (from the project root, the dev virtualenv active)::

    python -m benchmarks.replay_queue                  # 3 interleaved rounds, n = 2,000
    python -m benchmarks.replay_queue --rounds 1 --n 300

S4 enqueues its workflows from one task, each enqueue a commit it waits for, while the
queue's workers run the workflows. Its completions/s can never exceed the rate of that
sequential enqueue, and the workers' commits share the server with it. R1
(:mod:`benchmarks.replay`) times one enqueue with nothing else running; this times the
whole shape, with the engine's own statements, three ways:

* **pgbench**: one pgbench client replays the enqueue (``init_workflow`` of an ENQUEUED
  row), one commit each, back to back; ``--workers`` pgbench clients run the workers, each
  workflow one transaction: the engine's claim statement for one row, its step record and
  its outcome, committed together. That is less server work per workflow than any durable
  engine can do (the claim is not committed before the step runs, nor is the step before
  the outcome; dbos_trio's group commit makes 1.26 worker commits per workflow, CC1), so
  it is a floor. An idle worker sleeps ``--idle-ms`` between empty claims.
* **pgbench enqueue + dbos_trio workers**: the same enqueuing client, dbos_trio's
  executor serving the queue as S4 configures it (worker concurrency 50, polling every
  0.1 s, 20 connections): S4 with an enqueue that costs what pgbench's costs. The engine
  learns of rows another process enqueued by polling, as the official package does.
* **dbos_trio**: S4 itself, ``Queue.enqueue`` in a loop, the same executor serving.

Each reports completions/s over the window from the first enqueue to the moment every
workflow is SUCCESS (seen by a watcher polling the table, as S4's), and the enqueue rate.
Rounds interleave the three on fresh databases.
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from benchmarks import common, floor, growth_load, replay, scenarios
from benchmarks.common import median
from benchmarks.runner import fresh_database

# Who enqueues (the workers are pgbench's for the first, dbos_trio's for the others).
LIBRARIES = (
    "pgbench",
    "pgbench enqueue + dbos_trio workers",
    "bare trio enqueue + dbos_trio workers",
    "dbos_trio",
)
WORKFLOW = "s4_workflow"
FLOOR_OWNER = "replay-queue-floor"
# The executor as S4 configures it (worker concurrency, polling interval, pool size).
S4 = next(scenario.full for scenario in scenarios.SCENARIOS if scenario.id == "S4")


def worker_script(idle_ms: int) -> str:
    """One pgbench worker transaction: claim one ENQUEUED row of the queue with the
    engine's claim statement; if one came back, record its step and its outcome in the
    same transaction, else sleep ``idle_ms``."""
    from dbos_trio._sysdb.postgres.backend import claim_statement, statement_text
    from dbos_trio._sysdb.records import ClaimRequest, RecordedStep
    from dbos_trio._sysdb.rows import claim_params, outcome_params, step_params

    now = int(time.time() * 1000)
    claim = claim_params(
        ClaimRequest(
            queue_name=replay.QUEUE,
            partition_key=None,
            owner_xid=FLOOR_OWNER,
            executor_id="floor",
            application_version=common.APP_VERSION,
            application_name=common.APP_NAME,
            runs_latest_version=True,
            workflow_names=(WORKFLOW,),
            now_ms=now,
            local_budget=1,
            global_concurrency=None,
            rate_limit_max=None,
            rate_limit_period_ms=None,
            partition_concurrency=None,
            partition_rate_limit_max=None,
            partition_rate_limit_period_ms=None,
            consistent=False,
            rate_limited=False,
        )
    )
    step = RecordedStep(
        function_id=1,
        function_name="bench_step",
        output=replay.OUTPUT,
        error=None,
        serialization="py_pickle",
        child_workflow_id=None,
        started_at_ms=now,
        completed_at_ms=now,
    )
    outcome = outcome_params(
        "r", FLOOR_OWNER, status="SUCCESS", output=replay.OUTPUT, error=None, completed_at_ms=now
    )
    claimed = ":workflow_uuid"  # set by \gset from the claim
    claim_command = replay.pgbench_statement(
        claim_statement("dbos", consistent=False, partitioned=False), claim, claimed
    )
    record_step = replay.pgbench_statement(
        statement_text("dbos", "record_step"),
        step_params("r", FLOOR_OWNER, step, common.APP_NAME),
        claimed,
    )
    record_outcome = replay.pgbench_statement(
        statement_text("dbos", "record_outcome"), outcome, claimed
    )
    # The claim inside a CTE, so that one row always comes back for \gset to store.
    claim_one = (
        f"WITH claimed AS ({claim_command.removesuffix(';')})\n"
        "SELECT count(*) AS got, max(workflow_uuid) AS workflow_uuid FROM claimed \\gset"
    )
    return "\n".join(
        [
            "BEGIN;",
            claim_one,
            "\\if :got > 0",
            record_step,
            record_outcome,
            "COMMIT;",
            "\\else",
            "COMMIT;",
            f"\\sleep {idle_ms} ms",
            "\\endif",
            "",
        ]
    )


def _script_file(directory: str, name: str, text: str) -> str:
    path = f"{directory}/{name}.sql"
    Path(path).write_text(text)
    return path


def pgbench_enqueue(url: str, n: int, directory: str) -> tuple[float, float]:
    """pgbench's sequential enqueue of ``n`` workflows: the wall-clock (``time.time``)
    start of its first transaction and end of its last, from its per-transaction log."""
    script = _script_file(directory, "enqueue", replay.workload_script(None))
    command = floor.pgbench_command(url, script, 1, ("-t", n))
    command[-1:-1] = ["-l", f"--log-prefix={directory}/enqueue-log"]
    _args, env = floor.connection_args(url)
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"pgbench (enqueue) failed: {out.stderr.strip()}")
    transactions = [
        transaction
        for path in glob.glob(f"{directory}/enqueue-log*")
        for transaction in floor.logged_transactions(Path(path).read_text())
    ]
    start_us = min(end_us - latency_us for latency_us, end_us in transactions)
    return start_us / 1e6, max(end_us for _latency, end_us in transactions) / 1e6


def _completion(watcher: common.Watcher) -> float:
    """When the watcher saw the last workflow finish, on ``time.time``'s clock."""
    seen = watcher.wait(300.0)
    return time.time() - (time.perf_counter() - seen)


def _figures(
    n: int, start: float, enqueued: float, done: float, cpu_s: float | None = None
) -> dict[str, Any]:
    figures = {
        "completions_per_s": round(n / (done - start), 1),
        "enqueue_per_s": round(n / (enqueued - start), 1),
        "completion_lag_s": round(done - enqueued, 4),
    }
    if cpu_s is not None:  # this process's CPU (dbos_trio's side) per workflow
        figures["cpu_ms"] = round(1000 * cpu_s / n, 4)
    return figures


def run_pgbench(url: str, n: int, workers: int, idle_ms: int) -> dict[str, Any]:
    """The floor: pgbench on both sides of the queue."""
    with tempfile.TemporaryDirectory(prefix="bench-replay-queue-") as directory:
        script = _script_file(directory, "worker", worker_script(idle_ms))
        _args, env = floor.connection_args(url)
        serving = subprocess.Popen(
            floor.pgbench_command(url, script, workers, ("-T", 900)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        try:
            with common.watching(url, WORKFLOW) as watcher:
                watcher.expect(n)
                start, enqueued = pgbench_enqueue(url, n, directory)
                if serving.poll() is not None:  # the workers stopped: nothing will finish
                    raise RuntimeError(f"pgbench (workers) exited: {serving.stderr}")
                done = _completion(watcher)
        finally:
            serving.terminate()
            _out, errors = serving.communicate(timeout=30)
        if b"aborted" in errors:
            raise RuntimeError(f"pgbench (workers) failed: {errors.decode().strip()}")
    return _figures(n, start, enqueued, done)


async def run_dbos_trio(url: str, n: int, enqueuer: str) -> dict[str, Any]:
    """S4 on dbos_trio's executor, enqueued by ``enqueuer``: ``"dbos_trio"``
    (``Queue.enqueue``), ``"pgbench"`` (another process), or ``"bare trio"`` (libpq by
    hand on this process's Trio loop, R1's floor: what any Trio client would pay)."""
    from benchmarks.driver_trio import Bench

    bench = Bench(url, {"pool_size": S4["pool_size"]})
    queue = bench.dbos.register_queue(
        replay.QUEUE,
        worker_concurrency=S4["worker_concurrency"],
        polling_interval_sec=S4["poll_s"],
    )
    async with bench.dbos.launched():
        for handle in [await queue.enqueue(bench.fn.s4_workflow, i) for i in range(20)]:
            await handle.get_result()  # warm-up, outside the window (and not counted)
        with common.watching(url, WORKFLOW) as watcher:
            watcher.expect(20 + n)
            cpu_start = time.process_time()
            if enqueuer == "pgbench":
                with tempfile.TemporaryDirectory(prefix="bench-replay-queue-") as directory:
                    start, enqueued = await trio.to_thread.run_sync(
                        pgbench_enqueue, url, n, directory
                    )
            else:
                start = time.time()
                if enqueuer == "bare trio":
                    await replay.replay_bare_trio(url, None, n, 0)
                else:
                    for i in range(n):
                        await queue.enqueue(bench.fn.s4_workflow, i)
                enqueued = time.time()
            done = await trio.to_thread.run_sync(_completion, watcher)
            cpu_s = time.process_time() - cpu_start
    return _figures(n, start, enqueued, done, cpu_s)


def run(rounds: int, n: int, workers: int, idle_ms: int) -> list[dict[str, Any]]:
    records = []
    for round_no in range(1, rounds + 1):
        for library in LIBRARIES:
            enqueuer = library.split(" enqueue")[0]
            tag = enqueuer.replace(" ", "_") + ("_mixed" if library != enqueuer else "")
            with fresh_database(replay.ADMIN_URL, "replay_queue", tag, False) as url:
                trio.run(growth_load.migrate, url)
                if library == "pgbench":
                    metrics = run_pgbench(url, n, workers, idle_ms)
                else:
                    metrics = trio.run(run_dbos_trio, url, n, enqueuer)
            record = {"library": library, "round": round_no, "n": n, **metrics}
            print(json.dumps(record), file=sys.stderr, flush=True)
            records.append(record)
    return records


def table(records: list[dict[str, Any]]) -> str:
    """Median completions/s and enqueue/s per library, with the ratio to pgbench's."""
    base = median([r["completions_per_s"] for r in records if r["library"] == "pgbench"])
    lines = [
        "| library | completions/s [x pgbench] | enqueue/s | completion lag s | CPU ms/wf |",
        "|---|---|---|---|---|",
    ]
    for library in LIBRARIES:
        got = [r for r in records if r["library"] == library]
        if not got:
            continue
        done = median([r["completions_per_s"] for r in got])
        enqueue = median([r["enqueue_per_s"] for r in got])
        lag = median([r["completion_lag_s"] for r in got])
        cpu = [r["cpu_ms"] for r in got if "cpu_ms" in r]
        spent = f"{median(cpu):.3f}" if cpu else "-"
        ratio = f"{done:,.0f} [{done / base:.2f}]"
        lines.append(f"| {library} | {ratio} | {enqueue:,.0f} | {lag:.3f} | {spent} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=2000, help="workflows per measurement")
    parser.add_argument("--workers", type=int, default=4, help="pgbench worker clients")
    parser.add_argument("--idle-ms", type=int, default=5, help="an idle pgbench worker's sleep")
    args = parser.parse_args(argv)
    records = run(args.rounds, args.n, args.workers, args.idle_ms)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    replay.RESULTS.mkdir(exist_ok=True)
    out = replay.RESULTS / f"{stamp}-replay-queue.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = table(records)
    (replay.RESULTS / f"{stamp}-replay-queue.md").write_text(report + "\n")
    print(report)
    print(f"records in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
