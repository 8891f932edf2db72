"""Smoke test of the GC1 garbage-collection benchmark (benchmarks/gc.py), so it cannot rot:
tiny sizes, the table printed, every bulk row gone and no probe row touched (the script
asserts both). The numbers are not judged here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_gc_benchmark_runs_end_to_end_at_tiny_sizes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.gc", "--rows", "3000", "--idle-seconds", "1",
         "--batch-size", "500", "--no-save"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [row] = [line for line in done.stdout.splitlines() if line.startswith("| 1 |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "3,000" and cells[2] == "500"
