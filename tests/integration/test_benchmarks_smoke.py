"""Smoke test of the benchmark harness (benchmarks/), so it cannot rot.

Runs ``python -m benchmarks --quick`` once for the module: every scenario (S1-S7) with tiny
sizes, for dbos_trio, for the official ``dbos`` package (in the virtualenv the runner creates)
and for the pgbench floor, then checks every record's shape and that every run succeeded. The
numbers themselves are not judged here: quick sizes on a shared machine mean nothing.

Skipped, with the reason, where the official package's virtualenv cannot be created (no
package index reachable) or pgbench is not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.pg_support import admin_url

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.floor import pgbench_path  # noqa: E402
from benchmarks.runner import LIBRARIES, OfficialVenvError, ensure_official_python  # noqa: E402
from benchmarks.scenarios import FLOOR_METRICS, SCENARIOS  # noqa: E402

pytestmark = pytest.mark.interop

RECORD_KEYS = {
    "schema": str,
    "ok": bool,
    "library": str,
    "version": str,
    "scenario": str,
    "phase": str,
    "params": dict,
    "metrics": dict,
    "peak_rss_mb": float,
    "cpu": dict,
    "environment": dict,
    "wall_s": float,
    "pid": int,
    "round": int,
}
ENVIRONMENT_KEYS = ("pg_server_version", "pg_synchronous_commit", "pool_size", "concurrency")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    try:
        pgbench_path()
    except FileNotFoundError as exc:
        pytest.skip(f"benchmark smoke test needs pgbench: {exc}")
    try:
        official_python = ensure_official_python()
    except OfficialVenvError as exc:
        pytest.skip(f"cannot create the official dbos virtualenv (offline?): {exc}")
    results = tmp_path_factory.mktemp("bench-results")
    cmd = [
        sys.executable,
        "-m",
        "benchmarks",
        "--quick",
        "--rounds",
        "1",
        "--timeout",
        "60",
        "--results-dir",
        str(results),
        "--official-python",
        official_python,
        "--admin-url",
        admin_url(),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    return proc, results


def records_of(results: Path) -> list[dict[str, Any]]:
    files = sorted(results.glob("*.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


def failures(records: list[dict[str, Any]], library: str) -> list[str]:
    return [
        f"{r['scenario']}: {(r.get('error') or '').strip().splitlines()[-1:]}"
        for r in records
        if r["library"] == library and not r["ok"]
    ]


def test_every_scenario_and_library_printed_one_well_formed_record(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    proc, results = run
    records = records_of(results)
    seen = sorted((r["scenario"], r["library"]) for r in records)
    assert seen == sorted((s.id, lib) for s in SCENARIOS for lib in LIBRARIES), proc.stderr
    for record in records:
        for key, kind in RECORD_KEYS.items():
            value = record[key]
            ok_type = isinstance(value, int | float) if kind is float else isinstance(value, kind)
            assert ok_type, f"{record['scenario']} {record['library']}: {key}={value!r}"
        assert record["schema"] == "dbos-bench/1"
        if record["ok"]:
            assert record["error"] is None
            for key in ENVIRONMENT_KEYS:
                assert key in record["environment"], (record["library"], key)
        else:
            assert isinstance(record["error"], str) and record["error"]
    table = next(results.glob("*.md")).read_text()
    assert "| scenario | figure |" in table
    assert proc.stdout.startswith("# Benchmarks"), proc.stdout[:500]


def _check_library(records: list[dict[str, Any]], library: str) -> None:
    assert not failures(records, library), "\n".join(failures(records, library))
    by_id = {s.id: s for s in SCENARIOS}
    for record in (r for r in records if r["library"] == library):
        scenario = by_id[record["scenario"]]
        for metric in scenario.metrics:
            value = record["metrics"].get(metric.key)
            assert isinstance(value, int | float), (scenario.id, metric.key, value)
            assert value >= 0, (scenario.id, metric.key, value)
        assert record["cpu"]["per_unit_ms"] is not None
        if scenario.group == "S5":
            assert record["metrics"]["step1_reexecuted"] == 0
            assert record["metrics"]["correct"] is True
            assert record["metrics"]["pending_after_kill"] == record["params"]["n"]


def test_official_package_runs_every_scenario(
    run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _check_library(records_of(run[1]), "dbos")


def test_dbos_trio_runs_every_scenario(run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _check_library(records_of(run[1]), "dbos_trio")


def test_floor_runs_for_every_scenario(run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    records = records_of(run[1])
    assert not failures(records, "pgbench"), "\n".join(failures(records, "pgbench"))
    for record in (r for r in records if r["library"] == "pgbench"):
        for key in FLOOR_METRICS:
            assert record["metrics"][key] > 0, (record["scenario"], key)
