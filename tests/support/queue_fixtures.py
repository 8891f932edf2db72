"""Helpers for the queue and recovery tests.

* :class:`SideTable`: a table the tests' *step bodies* write to, on their own connection,
  so executions are counted outside the library under test.
* :func:`max_overlap`: how many (start, end) intervals were open at once.
* :func:`start_script` / :class:`Script`: a helper script from ``tests/support/scripts``
  in a subprocess (a real process to kill, or a second executor), with its output in a
  file.

The database fixtures (``dbos_url``, ``make_dbos``: each backend in turn) come from
``tests/conftest.py``; the row helpers from :mod:`support.backends`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from support.backends import backend_of, query, run_blocking

SUPPORT = Path(__file__).resolve().parent
SCRIPTS = SUPPORT / "scripts"
TESTS = SUPPORT.parent
SRC = TESTS.parent / "src"


class SideTable:
    """``side_effects(workflow_id, label, pid, value, started, ended)``: step bodies log here.

    Writes go through a plain (blocking) connection per thread-safe call, never through
    dbos_trio, so what the table says is independent of the library's bookkeeping. On
    PostgreSQL the table is ``public.side_effects`` in the test's database, its times the
    server's ``clock_timestamp()``; on SQLite it lives in a file of its own next to the
    system database (so step bodies never take the executor's write lock), its times epoch
    seconds. Either way times compare with each other, which is all they are used for.
    """

    def __init__(self, url: str) -> None:
        if backend_of(url) == "postgres":
            self.url, self.table, self.now = url, "public.side_effects", "clock_timestamp()"
            self.columns = "id bigserial PRIMARY KEY, started timestamptz NOT NULL DEFAULT "
            self.columns += f"{self.now}, ended timestamptz"
        else:
            self.url, self.table = url + "-side-effects", "side_effects"
            self.now = "((julianday('now') - 2440587.5) * 86400.0)"
            self.columns = f"id INTEGER PRIMARY KEY, started REAL NOT NULL DEFAULT {self.now}"
            self.columns += ", ended REAL"
        self.columns += ", workflow_id text, label text, pid int, value text"

    def create(self) -> None:
        run_blocking(self.url, f"CREATE TABLE IF NOT EXISTS {self.table} ({self.columns})")

    def log(self, workflow_id: str | None, label: str, value: str | None = None) -> int:
        """Record one execution of a step body; returns the row id (blocking call)."""
        [(row_id,)] = run_blocking(
            self.url,
            f"INSERT INTO {self.table} (workflow_id, label, pid, value) "
            "VALUES (%s, %s, %s, %s) RETURNING id",
            workflow_id,
            label,
            os.getpid(),
            value,
        )
        return int(row_id)

    def end(self, row_id: int) -> None:
        run_blocking(self.url, f"UPDATE {self.table} SET ended = {self.now} WHERE id = %s", row_id)

    async def rows(self, where: str = "TRUE", *params: Any) -> list[tuple[Any, ...]]:
        """(workflow_id, label, pid, value, started, ended) rows, in insertion order."""
        return await query(
            self.url,
            "SELECT workflow_id, label, pid, value, started, ended FROM "
            f"{self.table} WHERE {where} ORDER BY id",
            *params,
        )

    async def count(self, label: str) -> int:
        rows = await query(self.url, f"SELECT count(*) FROM {self.table} WHERE label = %s", label)
        return int(rows[0][0])


def max_overlap(intervals: list[tuple[Any, Any]]) -> int:
    """The largest number of (start, end) intervals open at one instant."""
    events: list[tuple[Any, int]] = []
    for start, end in intervals:
        events.append((start, 1))
        events.append((end, -1))
    # At equal times close before opening: touching intervals do not overlap.
    events.sort(key=lambda e: (e[0], e[1]))
    open_now = peak = 0
    for _, delta in events:
        open_now += delta
        peak = max(peak, open_now)
    return peak


class Script:
    """A helper script running in a subprocess; its stdout/stderr go to a temporary file."""

    def __init__(self, process: subprocess.Popen[bytes], output: Path) -> None:
        self.process = process
        self.output_path = output
        self._final_output: str | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        if self._final_output is not None:
            return self._final_output
        return self.output_path.read_text(errors="replace")

    def _collect(self) -> None:
        """Once the process has exited: keep its output in memory, remove the file."""
        if self._final_output is None and self.process.poll() is not None:
            self._final_output = self.output()
            self.output_path.unlink(missing_ok=True)

    def kill(self) -> None:
        """SIGKILL: no cleanup, no shutdown, connections dropped by the server."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)

    async def wait(self, timeout: float = 30.0) -> int:
        def waited() -> int:
            return self.process.wait(timeout)

        code = await trio.to_thread.run_sync(waited)
        self._collect()
        return code

    async def wait_for_line(self, text: str, timeout: float = 30.0) -> None:
        """Wait until the script has printed ``text``; fail with its output if it exits or
        takes longer than ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.output_path.name} did not print {text!r} "
                    f"(exit code {self.process.poll()}):\n{self.output()}"
                )
            await trio.sleep(0.05)

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not exit within 5 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await self.wait(5.0)
            except subprocess.TimeoutExpired:
                self.kill()
                await self.wait()
        self._collect()


def start_script(name: str, *args: str) -> Script:
    """Run ``tests/support/scripts/<name>`` with this interpreter, the source tree and
    ``tests/`` (for ``support``) importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(SRC), str(TESTS), *filter(None, [env.get("PYTHONPATH")])]
    )
    env["PYTHONUNBUFFERED"] = "1"
    handle, path = tempfile.mkstemp(prefix=f"{Path(name).stem}-", suffix=".log")
    with os.fdopen(handle, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, str(SCRIPTS / name), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    return Script(process, Path(path))
