"""Every example in examples/ runs, as a real process, and does what its docstring says.

Each runs in a fresh directory on its default embedded SQLite database (the examples need
no server). Services are stopped with SIGTERM, as a deploy would, and must exit cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from dbos_trio._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PATIENCE = 60.0  # real seconds a process may take to say what it must (a loaded machine)


def environment(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in (SYSTEM_DATABASE_URL_ENV, DATABASE_URL_ENV)
    }
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


def run_example(cwd: Path, name: str, *args: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class Service:
    """An example running as a process, stopped at most once by SIGTERM."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.stdout = process.stdout

    def stop(self) -> str:
        """SIGTERM it (once), wait for it to exit cleanly; the rest of its output."""
        if self.process.poll() is None and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        rest, _ = self.process.communicate(timeout=PATIENCE)
        assert self.process.returncode == 0, rest
        return rest


@contextmanager
def service(cwd: Path, name: str, *args: str, ready: str, **env: str) -> Iterator[Service]:
    """Start an example as a process and wait for its ``ready`` line; stop it at the end
    (if the test did not) and require a clean exit."""
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env=environment(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    running = Service(process)
    try:
        wait_for_line(process.stdout, ready)
        yield running
    finally:
        if process.returncode is None:
            running.stop()


def wait_for_line(stream: IO[str] | None, text: str) -> list[str]:
    assert stream is not None
    seen = []
    for line in stream:
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"the process ended without saying {text!r}: {''.join(seen)}")


def eventually(check: Callable[[], Any]) -> Any:
    """``check()``'s first truthy value, retried for up to PATIENCE real seconds."""
    deadline = time.monotonic() + PATIENCE
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http(method: str, url: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


UNFINISHED = ("ENQUEUED", "PENDING")


def stored_status(path: Path, workflow_id: str) -> str:
    with closing(sqlite3.connect(path)) as conn:
        [(status,)] = conn.execute(
            "SELECT status FROM workflow_status WHERE workflow_uuid = ?", (workflow_id,)
        ).fetchall()
    return str(status)


def test_fan_out_gathers_every_shops_answer_and_picks_the_best(tmp_path: Path) -> None:
    out = run_example(tmp_path, "fan_out.py")
    assert "best offer: {'item': 'kettle', 'shop': 'west', 'price': 14.6, 'stock': 12}" in out
    assert "6 checkpointed steps: ['fetch_price', 'fetch_price', 'fetch_price', " in out


@pytest.mark.slow
def test_the_scheduled_job_runs_once_per_tick(tmp_path: Path) -> None:
    out = run_example(tmp_path, "scheduled_job.py", "--runs", "2")
    reports = [line for line in out.splitlines() if line.startswith("report for ")]
    assert len(reports) == 2 and len(set(reports)) == 2, out  # two distinct ticks
    assert all(line.endswith("(team ops)") for line in reports)
    assert "2 scheduled runs" in out


def test_a_client_in_another_process_enqueues_and_awaits_results(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'client-demo.sqlite'}"
    with service(
        tmp_path,
        "client_process.py",
        "worker",
        ready="worker serving",
        DBOS_SYSTEM_DATABASE_URL=url,
    ) as worker:
        out = run_example(
            tmp_path, "client_process.py", "enqueue", "ada", "grace", DBOS_SYSTEM_DATABASE_URL=url
        )
        assert "worker stopped" in worker.stop()
    lines = out.splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "sent to ada: Welcome aboard, ada!",
        "sent to grace: Welcome aboard, grace!",
    ]


@pytest.mark.slow
def test_the_web_service_enqueues_per_request_serves_status_and_resumes_after_sigterm(
    tmp_path: Path,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with service(tmp_path, "web_service.py", "--port", str(port), ready="serving on") as web:
        status, body = http("POST", f"{base}/orders?item=book")
        assert status == 202
        quick = body["workflow_id"]
        done = eventually(lambda: http("GET", f"{base}/orders/{quick}")[1]["status"] == "SUCCESS")
        assert done
        assert http("GET", f"{base}/orders/{quick}") == (
            200,
            {"workflow_id": quick, "status": "SUCCESS", "output": "shipped book"},
        )
        assert http("GET", f"{base}/orders/nope")[0] == 404
        assert http("POST", f"{base}/orders")[0] == 400
        # An order that waits 8 s for the warehouse, interrupted by a deploy (SIGTERM).
        slow = http("POST", f"{base}/orders?item=lamp&seconds=8")[1]["workflow_id"]
        assert http("GET", f"{base}/orders/{slow}")[1]["status"] in UNFINISHED
        said = web.stop()
        assert "SIGTERM: finishing requests, then stopping" in said
        assert "stopped; unfinished workflows resume at the next start" in said
    assert stored_status(tmp_path / "web-service.sqlite", slow) in UNFINISHED
    # The next start recovers the interrupted order and finishes it.
    with service(tmp_path, "web_service.py", "--port", str(port), ready="serving on"):
        finished = eventually(
            lambda: http("GET", f"{base}/orders/{slow}")[1]["status"] == "SUCCESS"
        )
        assert finished
        assert http("GET", f"{base}/orders/{slow}")[1]["output"] == "shipped lamp"


def test_the_example_test_file_passes_with_the_pytest_plugin(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "dbos_trio.testing.pytest_plugin",
            str(EXAMPLES / "test_my_workflows.py"),
        ],
        cwd=EXAMPLES.parent,
        env=environment(PYTHONDONTWRITEBYTECODE="1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout


def test_the_upgrade_check_loop_names_the_divergence_and_passes_the_patched_version(
    tmp_path: Path,
) -> None:
    out = run_example(tmp_path, "check_upgrade.py")
    assert "FAILED: 3 in-flight workflow(s) would not replay" in out
    assert "diverged at function id 1: recorded reserve, new code calls charge" in out
    assert "check C: ok" in out
    assert "check C against the bundle: ok" in out
    assert "check C against the laptop's copy: ok" in out
    for order in ("sleeping", "waiting", "fanning"):
        assert f"C: shipped {order} (ok)" in out
    assert "['DBOS.patch-charge-first', 'charge', 'reserve']" in out
