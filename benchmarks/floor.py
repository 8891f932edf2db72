"""The physical floor: what PostgreSQL alone sustains on the same server, measured with pgbench.

Three runs against the fresh database the runner made, over TCP to the same host and port the
libraries use, with prepared statements (``-M prepared``, as a library keeping hot statements
prepared would):

* ``INSERT`` of one row + commit (autocommit, so every statement is a durable commit), 1 client:
  per-transaction latency median and p99 from pgbench's per-transaction log, and commits/s;
* the same with 8 clients (``-j 2`` threads: the machine has 2 cores): commits/s;
* ``SELECT 1``, 1 client: mean round-trip latency (1 / tps).

Prints one JSON line in the same shape as the library drivers (library ``pgbench``); the runner
turns these into each scenario's floor with the models in :mod:`benchmarks.scenarios`.
"""

from __future__ import annotations

import glob
import itertools
import os
import re
import resource
import shutil
import subprocess
import tempfile
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg

from benchmarks import common
from benchmarks.common import DriverArgs, median, percentile

LIBRARY = "pgbench"
INSERT_SQL = "INSERT INTO floor_rows (v) VALUES (1);\n"
SELECT_SQL = "SELECT 1;\n"


def pgbench_path() -> str:
    found = shutil.which("pgbench")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"), reverse=True)
    if candidates:
        return candidates[0]
    raise FileNotFoundError("pgbench not found on PATH nor under /usr/lib/postgresql/*/bin")


def version() -> str:
    out = subprocess.run([pgbench_path(), "--version"], capture_output=True, text=True, check=True)
    match = re.search(r"\d+(?:\.\d+)+", out.stdout)
    return match.group(0) if match else out.stdout.strip()


def connection_args(url: str) -> tuple[list[str], dict[str, str]]:
    parts = urlsplit(url)
    args = [
        "-h",
        parts.hostname or "127.0.0.1",
        "-p",
        str(parts.port or 5432),
        "-U",
        unquote(parts.username or "postgres"),
    ]
    env = dict(os.environ)
    if parts.password:
        env["PGPASSWORD"] = unquote(parts.password)
    return args, env


def logged_transactions(log: str) -> list[tuple[int, int]]:
    """(latency, end time) of each transaction in one pgbench log file, in microseconds
    (the end on the wall clock). Each line is ``client_id transaction_no time_us
    script_no epoch_s epoch_us``."""
    rows = [line.split() for line in log.splitlines() if line.strip()]
    return [(int(row[2]), int(row[4]) * 1_000_000 + int(row[5])) for row in rows]


def logged_latencies(log: str, clients: int) -> list[float]:
    """Per-transaction latencies (seconds) from one pgbench log file.

    One loaded CI run's floor logged a median latency of 0 µs for 300 single-row commits,
    which no round trip can take; so when a single client's log holds zero latencies,
    they are taken instead from the spacing of its transactions' end times (that client
    ran them back to back), which the same log records independently: one fewer value
    than transactions, the first one's start being unknown."""
    transactions = logged_transactions(log)
    latencies = [latency_us / 1e6 for latency_us, _end in transactions]
    if clients != 1 or min(latencies, default=1.0) > 0:
        return latencies
    ends_us = sorted(end_us for _latency, end_us in transactions)
    return [(later - earlier) / 1e6 for earlier, later in itertools.pairwise(ends_us)]


def pgbench_command(url: str, script_path: str, clients: int, length: tuple[str, int]) -> list[str]:
    """The pgbench command line running ``script_path`` from ``clients`` clients with
    prepared statements, for ``("-T", seconds)`` or ``("-t", transactions per client)``;
    the database name last (options may be inserted before it)."""
    conn_args, _env = connection_args(url)
    return [
        pgbench_path(),
        *conn_args,
        "-n",
        "-M",
        "prepared",
        "-c",
        str(clients),
        "-j",
        str(min(clients, 2)),
        length[0],
        str(max(1, length[1])),
        "-f",
        script_path,
        urlsplit(url).path.lstrip("/"),
    ]


def pgbench(
    url: str, script: str, clients: int, length: tuple[str, int], log_dir: str | None
) -> tuple[float, list[float]]:
    """Run one pgbench for ``("-T", seconds)`` or ``("-t", transactions per client)``;
    return tps and, with ``log_dir``, every transaction's latency in seconds."""
    _conn_args, env = connection_args(url)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
        script_path = f.name
    try:
        cmd = pgbench_command(url, script_path, clients, length)
        if log_dir is not None:
            cmd[-1:-1] = ["-l", f"--log-prefix={log_dir}/tx"]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"pgbench failed ({out.returncode}): {out.stderr.strip()}")
        match = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out.stdout)
        if match is None:
            raise RuntimeError(f"no tps in pgbench output: {out.stdout}")
        latencies: list[float] = []
        if log_dir is not None:
            for path in glob.glob(f"{log_dir}/tx*"):
                with open(path) as log:
                    latencies.extend(logged_latencies(log.read(), clients))
                os.unlink(path)
        return float(match.group(1)), latencies
    finally:
        os.unlink(script_path)


def measure(args: DriverArgs) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    url = args.database_url
    # Full runs last a number of seconds each; quick ones a number of transactions per client.
    count = args.params.get("transactions")
    seconds = int(args.params.get("seconds", 5))
    length = ("-t", int(count)) if count else ("-T", seconds)
    select_length = (
        ("-t", int(count)) if count else ("-T", int(args.params.get("select_seconds", seconds)))
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS floor_rows"
            " (id bigserial PRIMARY KEY, v integer NOT NULL, at timestamptz DEFAULT now())"
        )
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as log_dir:
        tps1, commit_lat = pgbench(url, INSERT_SQL, 1, length, log_dir)
        tps8, _ = pgbench(url, INSERT_SQL, 8, length, None)
        tps_select, _ = pgbench(url, SELECT_SQL, 1, select_length, None)
    if not commit_lat:
        raise RuntimeError("pgbench logged no transactions")
    metrics = {
        "commit_ms_median": common.ms(median(commit_lat)),
        "commit_ms_p99": common.ms(percentile(commit_lat, 0.99)),
        "commits_per_s_1": round(tps1, 1),
        "commits_per_s_8": round(tps8, 1),
        # pgbench's per-transaction log is too coarse for ~20-80 us round trips; the mean is not.
        "select1_ms": round(1000.0 / tps_select, 4),
        "commit_samples": len(commit_lat),
    }
    env = common.server_environment(url)
    env.update(pool_size=None, concurrency="1 and 8 clients", pgbench_mode="prepared")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = {
        "unit": "transaction",
        "pgbench_cpu_s": round(children.ru_utime + children.ru_stime, 3),
        "note": "CPU of the pgbench child processes over all three runs",
    }
    return metrics, cpu, env


def main() -> int:
    return common.run_driver(LIBRARY, version(), measure)


if __name__ == "__main__":
    raise SystemExit(main())
