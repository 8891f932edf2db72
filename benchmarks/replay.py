"""R1 (issue 21): dbos_trio against pgbench replaying dbos_trio's own statements.

Usage (from the project root, the dev virtualenv active)::

    python -m benchmarks.replay                  # 3 interleaved rounds, K = 0 and 10
    python -m benchmarks.replay --rounds 1 --n 100

The commit floor of the main runner (one single-row INSERT per commit) says what a commit
costs; it does not say what *these* commits cost, with the shared schema's indexes to
maintain. This benchmark gives each workload its own floor: the exact statements the
engine sends for it (rendered from the backend's statement files, parameters inlined as
literals except the workflow id), replayed by pgbench from one client with prepared
statements, one workflow per pgbench transaction. What is left between dbos_trio and that
floor is the client: Python, Trio and psycopg. Three Python floors in between tell
where it goes, each running the same statements with their parameters bound, prepared,
on one autocommit connection:

* **psycopg**: plain blocking psycopg (what Python costs, waiting inside libpq);
* **bare trio**: libpq driven by hand on Trio's I/O (what any Trio client pays);
* **trio driver**: dbos_trio's own connection, the call the backend makes (``fetch``);

and **dbos_trio** is the whole engine (pool, retries, checkpoints, serialization).
Every in-process figure also reports the process's CPU time per unit.

Workloads, each timed per call on a fresh database, dbos_trio in this process:

* **S1-K0 / S1-K10**: a workflow of K steps, start to result (init_workflow, K
  record_step, record_outcome: K+2 commits);
* **enqueue**: ``Queue.enqueue`` of a one-step workflow onto a queue this executor does
  not serve (S4's enqueue phase alone); the floor replays init_workflow of an ENQUEUED row.

Rounds interleave (every library, then the next workload, ...) so all see the same
machine.
"""

from __future__ import annotations

import argparse
import base64
import json
import pickle
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import trio
from psycopg import pq

from benchmarks import common, floor, growth_load
from benchmarks.common import median
from benchmarks.runner import fresh_database

# pgbench (the server's floor), plain psycopg (Python's), libpq by hand on Trio (Trio's),
# dbos_trio's driver alone, the whole engine.
LIBRARIES = ("pgbench", "psycopg", "bare trio", "trio driver", "dbos_trio")
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
RESULTS = Path(__file__).parent / "results"
QUEUE = "replay_q"
# The payloads as the engine writes them for the benchmark workflows (pickled, base64):
# the inputs of s4_workflow(10) (or s1_workflow(10)), a step's output. R2 (replay_queue)
# has the engine run workflows from these rows, so they must decode.
INPUTS = base64.b64encode(pickle.dumps({"args": (10,), "kwargs": {}})).decode("ascii")
OUTPUT = base64.b64encode(pickle.dumps(11)).decode("ascii")


def literal(value: Any) -> str:
    """``value`` as an SQL literal (a list or tuple as a text array's)."""
    if isinstance(value, list | tuple):
        quoted = ('"' + str(item).replace("\\", "\\\\").replace('"', '\\"') + '"' for item in value)
        return literal("{" + ",".join(quoted) + "}")
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def pgbench_statement(text: str, params: dict[str, Any], workflow_id: str = "('r' || :id)") -> str:
    """A psycopg-style statement as a pgbench command: each ``%(name)s`` becomes its
    literal, the workflow id the pgbench expression ``workflow_id`` (by default the
    per-transaction ``('r' || :id)``)."""
    body = "\n".join(line for line in text.splitlines() if not line.strip().startswith("--"))

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return workflow_id if name == "workflow_id" else literal(params[name])

    return re.sub(r"%\((\w+)\)s", value, body).replace("%%", "%").strip() + ";"


def workload(k: int | None) -> list[tuple[str, dict[str, Any]]]:
    """The statements of one unit of work, as the engine sends them (text, parameters):
    a K-step workflow (K+2 statements), or with ``k=None`` the enqueue of one workflow
    (1 statement). Each uses the workflow id ``r``; the replays give every unit its own."""
    from dbos_trio._sysdb.postgres.backend import statement_text
    from dbos_trio._sysdb.records import NewWorkflow, RecordedStep
    from dbos_trio._sysdb.rows import new_workflow_params, outcome_params, step_params

    now = int(time.time() * 1000)
    common_fields: dict[str, Any] = {
        "workflow_id": "r",
        "class_name": None,
        "config_name": None,
        "inputs": INPUTS,
        "serialization": "py_pickle",
        "creator_xid": str(uuid.uuid4()),
        "created_at_ms": now,
        "executor_id": "local",
        "application_version": common.APP_VERSION,
        "application_name": common.APP_NAME,
    }
    init_text = statement_text("dbos", "init_workflow")
    if k is None:
        new = NewWorkflow(
            status="ENQUEUED",
            name="s4_workflow",
            owner_xid=None,
            recovery_attempts=0,
            queue_name=QUEUE,
            **common_fields,
        )
        return [(init_text, new_workflow_params(new, None))]
    owner = common_fields["creator_xid"]
    new = NewWorkflow(
        status="PENDING", name="s1_workflow", owner_xid=owner, recovery_attempts=1, **common_fields
    )
    statements = [(init_text, new_workflow_params(new, None))]
    for function_id in range(1, k + 1):
        step = RecordedStep(
            function_id=function_id,
            function_name="bench_step",
            output=OUTPUT,
            error=None,
            serialization="py_pickle",
            child_workflow_id=None,
            started_at_ms=now,
            completed_at_ms=now,
        )
        statements.append(
            (statement_text("dbos", "record_step"), step_params("r", owner, step, common.APP_NAME))
        )
    outcome = outcome_params(
        "r", owner, status="SUCCESS", output=OUTPUT, error=None, completed_at_ms=now
    )
    statements.append((statement_text("dbos", "record_outcome"), outcome))
    return statements


def workload_script(k: int | None) -> str:
    """One pgbench transaction: :func:`workload`'s statements with literal parameters."""
    lines = [pgbench_statement(text, params) for text, params in workload(k)]
    return "\\set id random(1, 9000000000000000)\n" + "\n".join(lines) + "\n"


def replay(url: str, k: int | None, n: int) -> dict[str, Any]:
    """pgbench, one client, ``n`` transactions of the workload: latency median and rate."""
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as log_dir:
        tps, latencies = floor.pgbench(url, workload_script(k), 1, ("-t", n), log_dir)
    return {"latency_ms_median": common.ms(median(latencies)), "per_s": round(tps, 1)}


def _units(k: int | None, n: int) -> list[list[tuple[str, dict[str, Any]]]]:
    """``n`` units of the workload, each with its own workflow id."""
    statements = workload(k)
    tag = uuid.uuid4().hex[:8]
    return [
        [(text, {**params, "workflow_id": f"r{tag}-{i}"}) for text, params in statements]
        for i in range(n)
    ]


class Timing:
    """The wall time and the process's CPU time of each measured unit of work."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.cpu = 0.0
        self._started = (0.0, 0.0)

    def start(self) -> None:
        self._started = (time.perf_counter(), time.process_time())

    def stop(self, measured: bool) -> None:
        if measured:
            self.latencies.append(time.perf_counter() - self._started[0])
            self.cpu += time.process_time() - self._started[1]

    def figures(self) -> dict[str, Any]:
        n = len(self.latencies)
        return {
            "latency_ms_median": common.ms(median(self.latencies)),
            "per_s": round(n / sum(self.latencies), 1),
            "cpu_ms": round(1000 * self.cpu / n, 4),
        }


def replay_psycopg(url: str, k: int | None, n: int, warmup: int) -> dict[str, Any]:
    """The Python floor: plain (blocking) psycopg on one autocommit connection sends the
    engine's statements with their parameters bound, prepared, and reads what they return;
    no event loop, no pool, no engine."""
    import psycopg

    timing = Timing()
    with psycopg.connect(url, autocommit=True) as conn:
        for i, unit in enumerate(_units(k, warmup + n)):
            timing.start()
            for text, params in unit:
                cur = conn.execute(text, params, prepare=True)
                if cur.description is not None:
                    cur.fetchall()
            timing.stop(i >= warmup)
    return timing.figures()


async def replay_trio_driver(url: str, k: int | None, n: int, warmup: int) -> dict[str, Any]:
    """The floor of dbos_trio's driver: the same, on its Trio-native connection and the
    path the backend's statements take (``fetch``), without the engine or the pool."""
    from dbos_trio._pg.connecting import connect

    timing = Timing()
    conn = await connect(url, autocommit=True)
    try:
        for i, unit in enumerate(_units(k, warmup + n)):
            timing.start()
            for text, params in unit:
                await conn.fetch(text, params)
            timing.stop(i >= warmup)
    finally:
        await conn.close()
    return timing.figures()


async def replay_bare_trio(url: str, k: int | None, n: int, warmup: int) -> dict[str, Any]:
    """Trio's floor: libpq driven by hand on Trio's I/O (no psycopg generators, lock or
    cursor): each statement prepared once, then per call its parameters dumped, sent as
    one Bind/Execute, the reply awaited with ``wait_readable`` and its rows loaded. What
    any Trio client of libpq pays per statement at the least."""
    from psycopg import adapt
    from psycopg import errors as pg_errors

    from dbos_trio._pg.connecting import connect
    from dbos_trio._pg.fast_statements import fast_statement

    conn = await connect(url, autocommit=True)
    pgconn, fileno = conn.pgconn, conn.pgconn.socket
    dumper, loader = adapt.Transformer(conn), adapt.Transformer(conn)
    names: dict[tuple[bytes, tuple[int, ...]], bytes] = {}

    async def results() -> list[Any]:
        while pgconn.flush():
            await trio.lowlevel.wait_writable(fileno)
        got = []
        while True:
            while pgconn.is_busy():
                await trio.lowlevel.wait_readable(fileno)
                pgconn.consume_input()
            result = pgconn.get_result()
            if result is None:
                return got
            if result.status == pq.ExecStatus.FATAL_ERROR:
                raise pg_errors.error_from_result(result)
            got.append(result)

    timing = Timing()
    try:
        for i, unit in enumerate(_units(k, warmup + n)):
            timing.start()
            for text, params in unit:
                statement = fast_statement(text)
                assert statement is not None
                values = [params[name] for name in statement.order]
                dumped = dumper.dump_sequence(values, statement.formats)
                key = (statement.query, tuple(dumper.types))
                name = names.get(key)
                if name is None:
                    name = names[key] = b"bare_%d" % len(names)
                    pgconn.send_prepare(name, key[0], param_types=key[1])
                    await results()
                pgconn.send_query_prepared(name, dumped, param_formats=dumper.formats)
                for result in await results():
                    if result.status == pq.ExecStatus.TUPLES_OK:
                        loader.set_pgresult(result)
                        loader.load_rows(0, result.ntuples, tuple)
            timing.stop(i >= warmup)
    finally:
        await conn.close()
    return timing.figures()


async def measure_trio(url: str, k: int | None, n: int, warmup: int) -> dict[str, Any]:
    from benchmarks.driver_trio import Bench

    # The enqueue alone: onto a queue this executor does not serve.
    bench = Bench(url, {"listen_queues": []} if k is None else {})
    queue = bench.dbos.register_queue(QUEUE) if k is None else None
    timing = Timing()
    async with bench.dbos.launched():
        for i in range(warmup + n):
            timing.start()
            if queue is not None:
                await queue.enqueue(bench.fn.s4_workflow, i)
            else:
                await bench.fn.s1_workflow(k)
            timing.stop(i >= warmup)
    return timing.figures()


def run(rounds: int, ks: list[int | None], n: int) -> list[dict[str, Any]]:
    records = []
    for round_no in range(1, rounds + 1):
        for k in ks:
            label = "enqueue" if k is None else f"S1-K{k}"
            for library in LIBRARIES:
                with fresh_database(
                    ADMIN_URL, f"replay_{label}", library.replace(" ", "_"), False
                ) as url:
                    trio.run(growth_load.migrate, url)
                    if library == "pgbench":
                        metrics = replay(url, k, n)
                    elif library == "psycopg":
                        metrics = replay_psycopg(url, k, n, 20)
                    elif library == "bare trio":
                        metrics = trio.run(replay_bare_trio, url, k, n, 20)
                    elif library == "trio driver":
                        metrics = trio.run(replay_trio_driver, url, k, n, 20)
                    else:
                        metrics = trio.run(measure_trio, url, k, n, 20)
                record = {"workload": label, "library": library, "round": round_no, **metrics}
                print(json.dumps(record), file=sys.stderr, flush=True)
                records.append(record)
    return records


def table(records: list[dict[str, Any]]) -> str:
    """Median latency (rate, and client CPU ms per unit where measured in-process) of each
    workload per library, with each library's ratio to pgbench in brackets."""
    libraries = [lib for lib in LIBRARIES if any(r["library"] == lib for r in records)]
    lines = [
        "| workload | "
        + " | ".join(f"{lib}: median ms (per s, CPU ms) [x pgbench]" for lib in libraries)
        + " |",
        "|---" * (len(libraries) + 1) + "|",
    ]
    for name in dict.fromkeys(r["workload"] for r in records):
        cells = []
        for library in libraries:
            got = [r for r in records if r["workload"] == name and r["library"] == library]
            lat = median([r["latency_ms_median"] for r in got])
            rate = median([r["per_s"] for r in got])
            base = median(
                [
                    r["latency_ms_median"]
                    for r in records
                    if r["workload"] == name and r["library"] == "pgbench"
                ]
            )
            cpu = [r["cpu_ms"] for r in got if "cpu_ms" in r]
            spent = f", CPU {median(cpu):.3f}" if cpu else ""
            cells.append(f"{lat:.3f} ({rate:,.0f}{spent}) [{lat / base:.2f}]")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n", type=int, default=300, help="workflows per measurement")
    parser.add_argument("--k", default="0,10", help="step counts (S1-K), comma list")
    parser.add_argument("--no-enqueue", action="store_true", help="skip the enqueue workload")
    args = parser.parse_args(argv)
    ks: list[int | None] = [int(k) for k in args.k.split(",") if k]
    if not args.no_enqueue:
        ks.append(None)
    records = run(args.rounds, ks, args.n)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{stamp}-replay.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = table(records)
    (RESULTS / f"{stamp}-replay.md").write_text(report + "\n")
    print(report)
    print(f"records in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
