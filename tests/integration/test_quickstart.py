"""examples/quickstart.py does what the README says, in a fresh directory, as a real process:
killed (SIGKILL) mid-sleep, the next run says it found the interrupted workflow, skips the
completed steps and prints the sleep really left; a run after a finished one starts
fresh; ``--fresh`` discards an interrupted one.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbos_trio._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"
NAP = 10.0  # seconds of durable sleep in the killed runs
SLEEPING = re.compile(r"sleeping (\d+\.\d) s")

pytestmark = pytest.mark.slow


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop(SYSTEM_DATABASE_URL_ENV, None)  # the default: quickstart.sqlite in the cwd
    env.pop(DATABASE_URL_ENV, None)
    return env


def run(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(QUICKSTART), *args],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def kill_mid_sleep(cwd: Path, *args: str) -> str:
    """Run until it says it sleeps, wait a second more, SIGKILL it: its output so far."""
    process = subprocess.Popen(
        [sys.executable, str(QUICKSTART), "--sleep", str(NAP), *args],
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    seen = []
    try:
        for line in process.stdout:
            seen.append(line)
            if SLEEPING.search(line):
                time.sleep(1.0)
                break
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    return "".join(seen)


def left(output: str) -> float:
    found = SLEEPING.search(output)
    assert found, output
    return float(found.group(1))


def test_the_quickstart_resumes_after_a_kill_and_starts_fresh_after_a_finish(
    tmp_path: Path,
) -> None:
    first = kill_mid_sleep(tmp_path)
    assert "first run: starting a fresh workflow" in first
    assert "step 3 runs" in first and left(first) == NAP
    assert (tmp_path / "quickstart.sqlite").exists()

    # --fresh discards the interrupted workflow: every step runs again (killed again).
    again = kill_mid_sleep(tmp_path, "--fresh")
    assert "discarding the interrupted one" in again
    assert "step 1 runs" in again and left(again) == NAP

    resumed = run(tmp_path)
    assert "found the workflow you interrupted" in resumed
    assert "step 1 runs" not in resumed and "step 3 runs" not in resumed
    assert 0.0 <= left(resumed) <= NAP - 1.0  # the real remainder, at least 1 s was slept
    assert "step 4 runs" in resumed and "welcome, alice" in resumed

    fresh = run(tmp_path, "--sleep", "0.1")
    assert "starting a fresh workflow (the last one is SUCCESS)" in fresh
    assert "step 1 runs" in fresh and "welcome, alice" in fresh
