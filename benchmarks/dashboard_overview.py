"""How long the dashboard's overview takes on a large table (issue 31), on both backends.

Usage (from the project root, the dev virtualenv active, PostgreSQL on 127.0.0.1)::

    python -m benchmarks.dashboard_overview                   # 100k rows
    python -m benchmarks.dashboard_overview --rows 1000000 --backends sqlite

A fresh system database gets ``--rows`` finished workflows inserted by SQL (every tenth
failed, 20 names, half on a queue, latencies of 40 ms to 2 s), plus 2,000 ENQUEUED rows on
one queue, in two shapes: spread over the last 24 hours (``day``), and all finished within
the last hour (``hour``, the worst case for a one-hour window: every row is in it). Then
the overview page (``/overview`` with a 1-hour and a 24-hour window, health included) and
the workflow list are served in-process (the ASGI app, no socket), each five times; the
median and the slowest are printed in milliseconds. ``ANALYZE`` runs first, as autovacuum
would have on a table this size.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import psycopg
import trio

from benchmarks.growth_load import migrate
from dbos_trio import Client
from dbos_trio.dashboard import DashboardSettings
from dbos_trio.dashboard._http import Request
from dbos_trio.dashboard._server import make_app

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_URL = "postgresql://postgres@127.0.0.1:5432/dbos_trio_dashboard_bench"

_ROWS = """
INSERT INTO {schema}workflow_status (
    workflow_uuid, status, name, executor_id, created_at, updated_at, application_version,
    application_name, queue_name, started_at_epoch_ms, completed_at, inputs, output, error,
    serialization, recovery_attempts, priority)
SELECT 'bench-' || i,
       CASE WHEN i % 10 = 0 THEN 'ERROR' WHEN i % 97 = 0 THEN 'CANCELLED' ELSE 'SUCCESS' END,
       'bench_wf_' || (i % 20), 'bench-executor', at - 40 - (i * 37) % 2000,
       at, 'v1', 'bench', CASE WHEN i % 2 = 0 THEN 'bench-queue' END,
       CASE WHEN i % 2 = 0 THEN at - 30 END, at, '{{"positionalArgs":[1]}}', '1',
       CASE WHEN i % 10 = 0 THEN '{{"name":"ValueError","message":"bad"}}' END,
       'portable_json', 1, 0
FROM ({numbers}) AS n
"""
_ENQUEUED = """
INSERT INTO {schema}workflow_status (
    workflow_uuid, status, name, created_at, updated_at, application_version,
    application_name, queue_name, inputs, serialization, recovery_attempts, priority)
SELECT 'waiting-' || i, 'ENQUEUED', 'bench_wf_1', {now} - i * 100, {now} - i * 100, 'v1',
       'bench', 'bench-queue', '{{"positionalArgs":[1]}}', 'portable_json', 0, 0
FROM ({numbers}) AS n
"""


async def _load_postgres(rows: int, span: int, now: int) -> str:
    # Every value is this script's own integer, written into the SQL (no parameters).
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS dbos_trio_dashboard_bench")
        admin.execute("CREATE DATABASE dbos_trio_dashboard_bench")
    await migrate(PG_URL)
    numbers = f"SELECT i, {now} - (i * 7919) % {span} AS at FROM generate_series(1, {rows}) AS i"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(_ROWS.format(schema="dbos.", numbers=numbers).encode())
        waiting = "SELECT i FROM generate_series(1, 2000) AS i"
        conn.execute(_ENQUEUED.format(schema="dbos.", numbers=waiting, now=now).encode())
        conn.execute("ANALYZE dbos.workflow_status")
    return PG_URL


async def _load_sqlite(rows: int, span: int, now: int, folder: Path) -> str:
    import sqlite3

    path = folder / f"bench-{span}.sqlite"
    url = f"sqlite:///{path}"
    await migrate(url)
    numbers = (
        f"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {rows}) "
        f"SELECT i, {now} - (i * 7919) % {span} AS at FROM s"
    )
    waiting = (
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 2000) "
        "SELECT i FROM s"
    )
    with sqlite3.connect(path) as conn:
        conn.execute(_ROWS.format(schema="", numbers=numbers))
        conn.execute(_ENQUEUED.format(schema="", numbers=waiting, now=now))
        conn.execute("ANALYZE")
    return url


async def _time_pages(url: str) -> dict[str, tuple[float, float]]:
    results = {}
    async with Client(url, use_listen_notify=False) as client:
        app = make_app(client._require("benchmark"), DashboardSettings())
        for path, query in (
            ("/overview", {"minutes": "60"}),
            ("/overview", {"minutes": "1440"}),
            ("/workflows", {}),
            ("/workflows", {"status": "ERROR"}),
        ):
            request = Request(
                method="GET",
                path=path,
                query=query,
                headers={"host": "127.0.0.1"},
                cookies={},
                form={},
            )
            times = []
            for _ in range(5):
                started = time.perf_counter()
                response = await app.respond(request)
                times.append((time.perf_counter() - started) * 1000)
                assert response.status == 200, (path, response.status, response.body)
            label = path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
            results[label] = (statistics.median(times), max(times))
    return results


async def main(rows: int, backends: list[str]) -> None:
    now = int(time.time() * 1000)
    print(f"{rows:,} finished rows + 2,000 ENQUEUED; median / slowest of 5, ms")
    with tempfile.TemporaryDirectory() as folder:
        for backend in backends:
            for shape, span in (("day", 86_400_000), ("hour", 3_500_000)):
                if backend == "postgres":
                    url = await _load_postgres(rows, span, now)
                else:
                    url = await _load_sqlite(rows, span, now, Path(folder))
                for page, (median, slowest) in (await _time_pages(url)).items():
                    print(f"{backend:9} {shape:5} {page:28} {median:8.1f} {slowest:8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--backends", default="postgres,sqlite")
    args = parser.parse_args()
    trio.run(main, args.rows, args.backends.split(","))
