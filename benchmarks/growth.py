"""G1, table growth (issue 21): the engine's hot paths at 10k, 100k and 1M finished rows.

Usage (from the project root, the dev virtualenv active)::

    python -m benchmarks.growth                       # 10k, 100k, 1M; 10 steps per row
    python -m benchmarks.growth --sizes 0,10000 --steps 2 --recover 1000   # quick

One fresh database ``bench_growth_<random>`` grows in place: ``growth_load`` inserts the
history by SQL up to each size, and at each size (including 0, the empty-table baseline)
this measures, on dbos_trio's own code paths:

* **enqueue**: ``Client.enqueue`` of one workflow onto ``growth_q`` (latency per call);
* **claim**: the backend's ``claim`` of one row at the head of ``growth_q``, plain (SKIP
  LOCKED) and with a global concurrency and a rate limit (the counted, NOWAIT variant);
* **get_workflow_status** of a random history row, through the client;
* **list_workflows** with the common filters and paging (limit 50, newest first);
* **recovery** of 10,000 PENDING rows of this executor whose owner died: from before
  ``launched()`` until a watcher (own connection, every 20 ms) sees none in flight.

Every probe repeats and reports median and p99. For the SQL behind each listing and the
claim, ``EXPLAIN (ANALYZE, BUFFERS)`` is recorded at every size, so a plan that changes
shape as the table grows shows in the record (``--explain`` prints them). Records go to
``benchmarks/results/<stamp>-growth.jsonl``, the table to stdout. Only dbos_trio runs: the
figure of merit is each latency at 1M against the same latency on the empty table.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import trio

from benchmarks import common, growth_load
from benchmarks.growth_load import APP_NAME, APP_VERSION, EXECUTOR_ID, QUEUE
from benchmarks.runner import fresh_database

RESULTS = Path(__file__).parent / "results"
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

# The listing probes: (label, list_workflows filters). Times are filled in per run.
LISTINGS: list[tuple[str, dict[str, Any]]] = [
    ("none", {}),
    ("status=SUCCESS", {"status": "SUCCESS"}),
    ("status=ERROR", {"status": "ERROR"}),
    ("name", {"name": "growth_wf_7"}),
    ("queue", {"queue_name": QUEUE}),
    ("time 1h", {"start_time": "T-15d", "end_time": "T-15d+1h"}),
    ("id prefix", {"workflow_id_prefix": "abc"}),
    (
        "ERROR+name+1d",
        {"status": "ERROR", "name": "growth_wf_3", "start_time": "T-10d", "end_time": "T-9d"},
    ),
    ("page 2", {"status": "SUCCESS", "offset": 50}),
    ("page 101", {"status": "SUCCESS", "offset": 5000}),
]


def _filters(raw: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """Resolve the symbolic times ("T-15d+1h") against the run's clock."""
    out: dict[str, Any] = {"limit": 50, "sort_desc": True}
    for key, value in raw.items():
        if isinstance(value, str) and value.startswith("T-"):
            base, _, extra = value[2:].partition("+")
            ms = now_ms - int(base[:-1]) * growth_load.DAY_MS
            if extra:
                ms += int(extra[:-1]) * 3_600_000
            out[key] = ms
        else:
            out[key] = value
    return out


def _stats(samples: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(common.median(samples) * 1000, 3),
        "p99_ms": round(common.percentile(samples, 0.99) * 1000, 3),
    }


async def _timed(n: int, call: Callable[[int], Awaitable[Any]], warmup: int = 3) -> list[float]:
    for i in range(warmup):
        await call(-1 - i)
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        await call(i)
        samples.append(time.perf_counter() - t0)
    return samples


# --------------------------------------------------------------------------- EXPLAIN


def _explain(conn: psycopg.Connection[Any], sql: str, params: Any) -> dict[str, Any]:
    """The plan of one statement, executed (ANALYZE) and rolled back: writes leave no trace."""
    with conn.transaction(force_rollback=True):
        rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params).fetchall()
    plan = rows[0][0][0]
    return {
        "execution_ms": round(float(plan["Execution Time"]), 3),
        "top": _shape(plan["Plan"]),
        "text": conn.execute("EXPLAIN " + sql, params).fetchall(),
    }


def _shape(node: dict[str, Any]) -> str:
    """A one-line outline of a plan: node types and the indexes they use, depth first."""
    label = node["Node Type"]
    if "Index Name" in node:
        label += f"({node['Index Name']})"
    children = [_shape(child) for child in node.get("Plans", [])]
    return label + (" > [" + ", ".join(children) + "]" if children else "")


def explain_listings(url: str, now_ms: int) -> dict[str, Any]:
    from dbos_trio._core.filters import normalize_filters
    from dbos_trio._sysdb.postgres.backend import PostgresListing, orders_by_code_point
    from dbos_trio._sysdb.records import WorkflowFilters
    from dbos_trio._sysdb.sql.listing import list_workflows_query

    plans = {}
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT datcollate, to_jsonb(d) ->> 'datlocprovider' FROM pg_database AS d "
            "WHERE datname = current_database()"
        ).fetchone()
        listing = PostgresListing('"dbos"')
        listing.bytewise = row is not None and orders_by_code_point(
            row[0], row[1]
        )  # as the backend
        for label, raw in LISTINGS:
            normalized = normalize_filters(_filters(raw, now_ms))
            normalized["scope_application"] = APP_NAME  # as the client scopes it
            sql, params = list_workflows_query(WorkflowFilters(**normalized), listing)
            plan = _explain(conn, sql, params)
            plan["text"] = "\n".join(row[0] for row in plan["text"])
            plans[label] = plan
    return plans


def explain_claims(url: str, now_ms: int) -> dict[str, Any]:
    from dbos_trio._sysdb.postgres.backend import claim_statement
    from dbos_trio._sysdb.rows import claim_params

    plans = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for label, counted in (("claim", False), ("claim counted", True)):
            sql = claim_statement("dbos", consistent=counted, partitioned=False)
            plan = _explain(conn, sql, claim_params(_claim_request(now_ms, counted)))
            plan["text"] = "\n".join(row[0] for row in plan["text"])
            plans[label] = plan
    return plans


BATCH = 200  # rows per group-commit batch in the EXPLAINs below


def explain_batches(url: str, now_ms: int) -> dict[str, Any]:
    """The group-commit statements (issue 21) at this size, each with a batch of
    :data:`BATCH` rows: steps and outcomes of as many PENDING workflows, and as many new
    starts. Executed (ANALYZE) and rolled back."""
    from dbos_trio._sysdb.postgres.backend import statement_text
    from dbos_trio._sysdb.records import NewWorkflow, RecordedStep
    from dbos_trio._sysdb.rows import new_workflow_params, outcome_params, step_params
    from dbos_trio._sysdb.sql.step_batches import batch_params

    growth_load.POSTGRES.insert_pending(url, BATCH, "batch", now_ms)
    ids = [f"rec-batch-{i}" for i in range(1, BATCH + 1)]
    owner = "dead-owner"  # the PENDING rows' owner (growth_load)
    step = RecordedStep(
        function_id=1,
        function_name="s",
        output="o",
        error=None,
        serialization="portable_json",
        child_workflow_id=None,
        started_at_ms=now_ms,
        completed_at_ms=now_ms,
    )
    steps = [step_params(wid, owner, step, APP_NAME) for wid in ids]
    outcomes = [
        outcome_params(wid, owner, status="SUCCESS", output="o", error=None, completed_at_ms=now_ms)
        for wid in ids
    ]
    starts = [
        new_workflow_params(
            NewWorkflow(
                workflow_id=str(uuid.uuid4()),
                status="PENDING",
                name="growth_started",
                class_name=None,
                config_name=None,
                inputs="[]",
                serialization="portable_json",
                creator_xid="c",
                owner_xid="c",
                recovery_attempts=1,
                created_at_ms=now_ms,
                executor_id=EXECUTOR_ID,
                application_version=APP_VERSION,
                application_name=APP_NAME,
            ),
            None,
        )
        for _ in range(BATCH)
    ]
    plans = {}
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            for label, name, items in (
                (f"record_steps x{BATCH}", "record_steps", steps),
                (f"record_outcomes x{BATCH}", "record_outcomes", outcomes),
                (f"init_workflows x{BATCH}", "init_workflows", starts),
            ):
                plan = _explain(conn, statement_text("dbos", name), batch_params(items))
                plan["text"] = "\n".join(row[0] for row in plan["text"])
                plans[label] = plan
    finally:
        growth_load.POSTGRES.delete_recovered(url, "batch")
    return plans


def _claim_request(now_ms: int, counted: bool) -> Any:
    from dbos_trio._sysdb.records import ClaimRequest

    return ClaimRequest(
        queue_name=QUEUE,
        partition_key=None,
        owner_xid=str(uuid.uuid4()),
        executor_id=EXECUTOR_ID,
        application_version=APP_VERSION,
        application_name=APP_NAME,
        runs_latest_version=True,
        workflow_names=("growth_queued",),
        now_ms=now_ms,
        local_budget=1,
        global_concurrency=1_000_000 if counted else None,
        rate_limit_max=1_000_000 if counted else None,
        rate_limit_period_ms=60_000 if counted else None,
        partition_concurrency=None,
        partition_rate_limit_max=None,
        partition_rate_limit_period_ms=None,
        consistent=counted,
        rate_limited=counted,
    )


# --------------------------------------------------------------------------- probes


async def probe_latencies(url: str, size: int, n: int, now_ms: int) -> dict[str, Any]:
    """Enqueue, claim, status and listing latencies at the table's current size, through
    the engine (either backend: ``url`` picks it)."""
    import dbos_trio
    from dbos_trio._sysdb.open import BackendOptions, open_system_database

    out: dict[str, Any] = {}
    options = dbos_trio.EnqueueOptions(
        workflow_name="growth_queued", queue_name=QUEUE, app_version=APP_VERSION
    )
    rng = random.Random(size)
    async with dbos_trio.Client(url, app_name=APP_NAME) as client:
        out["enqueue"] = _stats(await _timed(2 * n, lambda i: client.enqueue(options, i)))
        ids = [growth_load.history_id(rng.randint(1, size)) for _ in range(n)] if size else []

        async def status(i: int) -> Any:
            return await client.get_workflow_status(ids[i] if size and i >= 0 else "missing")

        out["get_workflow_status"] = _stats(await _timed(n, status))
        for label, raw in LISTINGS:
            filters = _filters(raw, now_ms)

            async def listing(_: int, filters: dict[str, Any] = filters) -> Any:
                return await client.list_workflows(**filters)

            out[f"list {label}"] = _stats(await _timed(max(10, n // 10), listing))
    sysdb = await open_system_database(url, BackendOptions(run_migrations=False))
    try:
        for label, counted in (("claim", False), ("claim counted", True)):

            async def claim(_: int, counted: bool = counted) -> Any:
                got = await sysdb.claim(_claim_request(now_ms, counted))
                if len(got) != 1:
                    raise RuntimeError(f"claim returned {len(got)} rows, not 1")

            out[label] = _stats(await _timed(n - 3, claim))
    finally:
        await sysdb.close()
    return out


async def probe_size(url: str, size: int, n: int, now_ms: int) -> dict[str, Any]:
    """:func:`probe_latencies`, then the claim's plans (a few enqueued rows are left)."""
    out = await probe_latencies(url, size, n, now_ms)
    out["explain_claims"] = explain_claims(url, now_ms)
    growth_load.POSTGRES.finish_queued(url, now_ms)
    return out


async def probe_recovery(
    url: str, n: int, tag: str, history: growth_load.History = growth_load.POSTGRES
) -> dict[str, Any]:
    """Launch over ``n`` dead PENDING rows; seconds until none is in flight (watched on
    the backend's own connection, every 20 ms)."""
    import dbos_trio

    history.insert_pending(url, n, tag, int(time.time() * 1000))
    dbos = dbos_trio.DBOS(
        dbos_trio.Config(
            app_name=APP_NAME, database_url=url, app_version=APP_VERSION, executor_id=EXECUTOR_ID
        )
    )

    @dbos.workflow(name="growth_recover")
    async def growth_recover(i: int) -> int:
        return i

    @dbos.workflow(name="growth_queued")
    async def growth_queued(i: int) -> int:
        return i

    done = threading.Event()
    seen: list[float] = []

    def watch() -> None:
        while not done.is_set():
            if history.in_flight(url) == 0:
                seen.append(time.perf_counter())
                done.set()
                return
            time.sleep(common.POLL_INTERVAL_S)

    if history.in_flight(url) != n:
        raise RuntimeError("rows other than the recovery's are in flight")
    watcher = threading.Thread(target=watch, daemon=True)
    started = time.perf_counter()
    watcher.start()
    async with dbos.launched():
        await trio.to_thread.run_sync(done.wait, 900.0)
    if not seen:
        raise RuntimeError(f"recovery of {n} rows did not finish in 900 s")
    recovered = history.recovered(url, tag)
    if recovered != n:
        raise RuntimeError(f"only {recovered} of {n} recovered rows are SUCCESS")
    history.delete_recovered(url, tag)
    return {"recovery_s": round(seen[0] - started, 3), "recovered": n}


# --------------------------------------------------------------------------- runner


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    RESULTS.mkdir(exist_ok=True)
    out_path = RESULTS / f"{stamp}-growth.jsonl"
    with fresh_database(args.admin_url, "growth", "dbos_trio", args.keep_database) as url:
        trio.run(growth_load.migrate, url)
        now_ms = int(time.time() * 1000)
        t0 = growth_load.history_start(now_ms)
        have = 0
        for size in args.sizes:
            record: dict[str, Any] = {"scenario": "G1", "size": size, "steps_per_row": args.steps}
            if size > have:
                record["load"] = growth_load.grow(url, have, size, args.steps, t0)
                have = size
            print(f"[growth] {size:>9} rows loaded; probing", file=sys.stderr, flush=True)
            record["tables"] = growth_load.table_sizes(url)
            latency = trio.run(probe_size, url, size, args.samples, now_ms)
            claims = latency.pop("explain_claims")
            record["latency"] = latency
            record["explain"] = {
                **explain_listings(url, now_ms),
                **claims,
                **explain_batches(url, now_ms),
            }
            if args.recover:
                record["latency"].update(trio.run(probe_recovery, url, args.recover, f"s{size}"))
            record["environment"] = common.server_environment(url)
            record["peak_rss_mb"] = common.peak_rss_mb()
            records.append(record)
            with out_path.open("a") as f:
                f.write(json.dumps(record, default=str) + "\n")
    print(f"[growth] records in {out_path}", file=sys.stderr)
    return records


def table(records: list[dict[str, Any]], explain: bool = False, plans: bool = True) -> str:
    """Median (p99) per probe and size, the ratio of the largest size to the smallest, and
    (``plans``) the outline of every plan at the largest size."""
    sizes = [r["size"] for r in records]
    probes = list(records[0]["latency"])
    head = "| probe | " + " | ".join(f"{s:,} rows" for s in sizes) + " | last/first |"
    lines = [head, "|" + "---|" * (len(sizes) + 2)]
    for probe in probes:
        cells = []
        for r in records:
            v = r["latency"].get(probe)
            if probe == "recovery_s":
                cells.append(f"{v} s")
            elif probe == "recovered":
                cells.append(str(v))
            else:
                cells.append(f"{v['median_ms']} ({v['p99_ms']})")
        first, last = records[0]["latency"][probe], records[-1]["latency"][probe]
        if isinstance(first, dict):
            first, last = first["median_ms"], last["median_ms"]
        ratio = f"{last / first:.2f}" if first else "-"
        lines.append(f"| {probe} | " + " | ".join(cells) + f" | {ratio} |")
    if not plans:
        return "\n".join(lines)
    last = records[-1]
    lines.append("")
    lines.append(f"Plans at {last['size']:,} rows (EXPLAIN ANALYZE execution ms):")
    for label, plan in last["explain"].items():
        lines.append(f"- {label}: {plan['execution_ms']} ms: {plan['top']}")
        if explain:
            lines.append("```\n" + plan["text"] + "\n```")
    return "\n".join(lines)


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """G1's options (on either backend), beside what ``parser`` already has."""
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[0, 10_000, 100_000, 1_000_000],
        help="workflow_status sizes, ascending (default 0,10000,100000,1000000)",
    )
    parser.add_argument("--steps", type=int, default=10, help="operation_outputs rows per row")
    parser.add_argument("--samples", type=int, default=100, help="calls per latency probe")
    parser.add_argument("--recover", type=int, default=10_000, help="PENDING rows to recover")
    parser.add_argument("--explain", action="store_true", help="print every plan in full")
    args = parser.parse_args(argv)
    if args.sizes != sorted(args.sizes):
        parser.error("--sizes must be ascending")
    return args


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.growth", description=__doc__)
    parser.add_argument("--admin-url", default=ADMIN_URL)
    parser.add_argument("--keep-database", action="store_true")
    args = parse_args(parser, argv)
    print(table(run(args), explain=args.explain))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
