"""Run a long query, wait for SIGINT, and report what Ctrl-C left behind.

Used by the driver and pool tests: they start this script in a subprocess, wait until its
query is running on the server, send SIGINT, then read the JSON line it prints and check
how it exited. Modes:

* ``autocommit`` — ``SELECT pg_sleep(600)`` in the main task on an autocommit connection;
* ``transaction`` — an INSERT then ``pg_sleep(600)`` inside ``conn.transaction()``;
* ``child`` — the ``pg_sleep(600)`` runs in a nursery child (Ctrl-C reaches the main task,
  the child is cancelled);
* ``pool`` — INSERT then ``pg_sleep(600)`` in a transaction on a pooled connection.

Usage: ``interrupt_query.py URL MODE APPLICATION_NAME TABLE``. Prints one JSON line
``{"pid": ...}`` once connected (the test then waits for the query to show as active in
``pg_stat_activity``), and after the interrupt one line describing the connection, then
lets the interrupt propagate so the process exits with KeyboardInterrupt.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import Any

import trio
from psycopg.conninfo import make_conninfo

from dbos_trio._pg import driver as pg_driver
from dbos_trio._pg.connecting import connect
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._pg.pool import Pool

SLEEP = "SELECT pg_sleep(600)"  # ten times the hang guard the caller waits for the exit


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


async def scalar(conn: TrioConnection, query: str, params: Any = None) -> Any:
    cur = await conn.execute(query, params)
    row = await cur.fetchone()
    return None if row is None else row[0]


async def main(url: str, mode: str, application_name: str, table: str) -> None:
    observer = await connect(url, autocommit=True)
    await observer.execute(f"CREATE TABLE IF NOT EXISTS {table} (v int)")
    pool = Pool(make_conninfo(url, application_name=application_name), max_size=1)
    conn = await connect(url, autocommit=True, application_name=application_name)
    if mode == "pool":
        async with pool.connection() as pooled:
            pid = await scalar(pooled, "SELECT pg_backend_pid()")
    else:
        pid = await scalar(conn, "SELECT pg_backend_pid()")
    emit(pid=pid)
    started = time.monotonic()
    try:
        if mode == "autocommit":
            await conn.execute(SLEEP)
        elif mode == "transaction":
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {table} VALUES (1)")
                await conn.execute(SLEEP)
        elif mode == "child":
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.execute, SLEEP)
        elif mode == "pool":
            async with pool.connection() as pooled, pooled.transaction():
                await pooled.execute(f"INSERT INTO {table} VALUES (1)")
                await pooled.execute(SLEEP)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    except BaseException as interrupt:
        elapsed = time.monotonic() - started
        server = await observer.execute(
            "SELECT state, query FROM pg_stat_activity WHERE pid = %s", [pid]
        )
        state = await server.fetchone()
        if mode == "pool":
            async with pool.connection() as pooled:
                reused_pid = await scalar(pooled, "SELECT pg_backend_pid()")
                status = pooled.info.transaction_status.name
                next_value = await scalar(pooled, "SELECT 41 + 1")
        else:
            reused_pid = pid
            status = conn.info.transaction_status.name
            next_value = None if conn.closed else await scalar(conn, "SELECT 41 + 1")
        emit(
            interrupted=repr(interrupt),
            elapsed=elapsed,
            server_state=None if state is None else state[0],
            server_query=None if state is None else state[1],
            status=status,
            next_value=next_value,
            reused_pid=reused_pid,
            rows=await scalar(observer, f"SELECT count(*) FROM {table}"),
            idle_in_transaction=await scalar(
                observer,
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE application_name = %s AND state LIKE 'idle in transaction%%'",
                [application_name],
            ),
        )
        raise


if __name__ == "__main__":
    # What Ctrl-C leaves behind is the subject, not how long the clean-up may take: give it
    # the caller's hang guard rather than the driver's 5 s, which a loaded machine exceeds.
    pg_driver.CLEANUP_LIMIT_SECONDS = 60.0
    trio.run(main, *sys.argv[1:5])


# --------------------------------------------------------------- harness used by tests

SCRIPT = __file__


async def interrupt(
    url: str, mode: str, *, application_name: str, table: str
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str], float]:
    """Run this script in ``mode``, Ctrl-C it once its query runs; return its report.

    Returns the JSON report printed after the interrupt, the finished process, and the
    seconds between SIGINT and the process's exit.
    """
    process = await trio.to_thread.run_sync(
        lambda: subprocess.Popen(
            [sys.executable, SCRIPT, url, mode, application_name, table],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    try:
        assert process.stdout is not None
        first = await trio.to_thread.run_sync(process.stdout.readline)
        if not first:
            raise AssertionError(f"script failed before connecting: {process.stderr}")
        pid = json.loads(first)["pid"]
        observer = await connect(url, autocommit=True)
        try:
            with trio.fail_after(60):  # a hang guard: the process starts and connects
                while True:
                    row = await (
                        await observer.execute(
                            "SELECT state, query FROM pg_stat_activity WHERE pid = %s", [pid]
                        )
                    ).fetchone()
                    if row is not None and row[0] == "active" and "pg_sleep" in row[1]:
                        break
                    await trio.sleep(0.01)
        finally:
            await observer.close()
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = await trio.to_thread.run_sync(lambda: process.communicate(timeout=60))
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = [line for line in (first + out).splitlines() if line.strip()]
    if len(lines) < 2:
        raise AssertionError(f"no report from the script; stderr:\n{err}")
    finished = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return json.loads(lines[-1]), finished, took
