"""Helpers for the interop tests: URLs, rows, and running the official side as a process."""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import trio
from psycopg.conninfo import conninfo_to_dict

DRIVER = Path(__file__).resolve().parent / "official" / "driver.py"
RESULT_PREFIX = "RESULT "


def as_url(conninfo: str) -> str:
    """A ``postgresql://`` URL (what both packages accept) for a libpq conninfo string."""
    params = conninfo_to_dict(conninfo)
    user = params.get("user", "postgres")
    password = params.get("password")
    auth = f"{user}:{password}" if password else str(user)
    host = params.get("host", "127.0.0.1")
    port = params.get("port", "5432")
    return f"postgresql://{auth}@{host}:{port}/{params['dbname']}"


async def rows(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of ``query`` on a connection of the test's own (in a worker thread)."""

    def run() -> list[tuple[Any, ...]]:
        with psycopg.connect(url, autocommit=True) as conn:
            cur = conn.execute(query, params)  # type: ignore[arg-type]
            return [] if cur.description is None else cur.fetchall()

    return await trio.to_thread.run_sync(run)


def _result_of(stdout: str, stderr: str, what: str) -> Any:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    raise AssertionError(f"{what} printed no result.\nstdout:\n{stdout}\nstderr:\n{stderr[-4000:]}")


async def run_official(python: Path, *args: str, timeout: float = 60, driver: Path = DRIVER) -> Any:
    """Run a driver command with the official package's Python; return its RESULT.
    ``driver`` is the script (default ``official/driver.py``)."""
    with trio.fail_after(timeout):
        done = await trio.run_process(
            [str(python), str(driver), *args], capture_stdout=True, capture_stderr=True, check=False
        )
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    if done.returncode != 0:
        raise AssertionError(
            f"official driver {args[0]} exited {done.returncode}\nstdout:\n{stdout}\n"
            f"stderr:\n{stderr[-4000:]}"
        )
    return _result_of(stdout, stderr, f"official driver {args[0]}")


async def run_cli(cli: Path, *args: str, timeout: float = 60) -> Any:
    """Run the official ``dbos`` CLI; return its JSON output."""
    with trio.fail_after(timeout):
        done = await trio.run_process(
            [str(cli), *args], capture_stdout=True, capture_stderr=True, check=False
        )
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, f"dbos {' '.join(args)} exited {done.returncode}:\n{stderr}"
    return json.loads(stdout)


@asynccontextmanager
async def official_executor(python: Path, url: str, app_name: str) -> AsyncIterator[None]:
    """An official ``dbos`` executor process serving ``official_q`` for the block.

    Its logs go to a temporary file (shown if it fails to start); it stops when its
    standard input is closed.
    """
    with tempfile.TemporaryFile() as log:
        # Popen only forks; the blocking reads and waits below run in worker threads.
        process = subprocess.Popen(  # noqa: ASYNC220
            [str(python), str(DRIVER), "serve", url, app_name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        assert process.stdout is not None and process.stdin is not None
        stdout = process.stdout

        def wait_ready() -> bool:
            for line in iter(stdout.readline, b""):
                if line.strip() == b"READY":
                    # Keep draining so the child never blocks on a full pipe.
                    threading.Thread(target=stdout.read, daemon=True).start()
                    return True
            return False

        try:
            with trio.fail_after(60):
                ready = await trio.to_thread.run_sync(wait_ready, abandon_on_cancel=True)
            if not ready:
                process.wait(timeout=10)
                log.seek(0)
                raise AssertionError(
                    f"official executor did not start:\n{log.read().decode()[-4000:]}"
                )
            yield
        finally:
            if process.poll() is None:
                process.stdin.close()
                try:
                    await trio.to_thread.run_sync(process.wait, 30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    await trio.to_thread.run_sync(process.wait)
