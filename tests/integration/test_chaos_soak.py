"""The chaos soak's small configuration (``python -m chaos.soak --ci``), and its fleet
variant (``--fleet``), in the suite.

Executors SIGKILLed and restarted, PostgreSQL restarted (fast and immediate, down for up
to 5 s) under a queue of 1,500 workflows; every invariant of chaos/README.md must hold.
Runs its own throwaway cluster (never the shared server).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from chaos.cluster import available  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(available() is not None, reason=f"no throwaway clusters: {available()}"),
]


def test_the_small_soak_keeps_every_invariant() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chaos.soak", "--ci"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "soak: OK" in done.stdout
    kills = next(line for line in done.stdout.splitlines() if line.startswith("executor kills"))
    # The chaos did happen: some executors killed, the database restarted at least once.
    assert "executor kills: 0" not in kills and "database restarts: 0" not in kills


def test_the_small_fleet_soak_keeps_every_invariant() -> None:
    # Adoption after 5 s, every database outage longer than that (every executor cut off at
    # once), one executor dead for good midway: its work moves, and nobody else's does.
    done = subprocess.run(
        [sys.executable, "-m", "chaos.soak", "--ci", "--fleet"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "soak: OK" in done.stdout
    assert "dead for good: exec-" in done.stdout
    outage = next(line for line in done.stdout.splitlines() if line.startswith("longest outage"))
    assert float(outage.split()[2]) > 5.0  # longer than the adoption window
