"""``dbos-trio dashboard``, run as a real subprocess: settings refused before anything
binds (exit 2), and a served dashboard answering until interrupted."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import trio

from dbos_trio import SetWorkflowID
from dbos_trio.testing import sqlite_url

from support.dashboard_support import Browserless, demo_app


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_bad_settings_are_refused_before_anything_binds(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "none.sqlite")
    exposed = cli("dashboard", "-s", url, "--host", "0.0.0.0")
    assert exposed.returncode == 2 and "token is required" in exposed.stderr
    short = cli("dashboard", "-s", url, "--token", "short")
    assert short.returncode == 2 and "16 characters" in short.stderr
    port = cli("dashboard", "-s", url, "--port", "70000")
    assert port.returncode == 2 and "0..65535" in port.stderr


async def test_the_cli_serves_the_database_until_interrupted(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "cli.sqlite")
    dbos, fns = demo_app(url)
    async with dbos.launched():
        with SetWorkflowID("made-by-the-test"):
            await (await dbos.start_workflow(fns["child"], 2)).get_result()
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "dbos_trio.cli", "dashboard", "-s", url, "--port", "0",
         "--read-only"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        line = b""
        with trio.fail_after(30):  # a hang guard only
            while b"\n" not in line:
                chunk = await process.stdout.receive_some(1024)
                assert chunk, "the dashboard exited before listening"
                line += chunk
        text = line.decode()
        assert "listening on http://127.0.0.1:" in text and "cli.sqlite" in text
        base = text.split("listening on ")[1].split()[0]
        page = await Browserless(base).get("/workflows")
        assert page.status == 200 and "made-by-the-test" in page.text and "read-only" in page.text
    finally:
        process.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            code = await process.wait()
    assert code == 130
