"""Why a workflow failed, read from another process without trusting a pickle.

The application (its own process, its exception class in ``__main__``) fails a queued
workflow: a step raises ``PaymentDeclined`` three times. ``dbos-trio workflow get`` and
``workflow steps``, in another process with no ``--allow-pickle`` and no way to import that
class, show the error's type and message, each attempt, and the traceback down to the
application's line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dbos_trio.testing import sqlite_url

SCRIPT = Path(__file__).resolve().parents[1] / "support" / "scripts" / "failing_checkout.py"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_a_failed_workflows_cause_attempts_and_traceback_are_shown_without_unpickling(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path / "shop.sqlite")
    ran = subprocess.run(
        [sys.executable, str(SCRIPT), url], capture_output=True, text=True, timeout=60
    )
    assert "failed: DBOSMaxStepRetriesExceeded" in ran.stdout, ran.stderr
    shown = cli("workflow", "get", "order-1", "-s", url)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "DBOSMaxStepRetriesExceeded: Step charge has exceeded its maximum of 3 retries" in text
    # Three attempts under the workflow's error, and again under the failed step.
    assert text.count("__main__.PaymentDeclined: card declined for order-1") == 6
    assert "attempts:" in text and "traceback:" in text
    assert 'raise PaymentDeclined(f"card declined for {order}")' in text
    error_block = text.split("\nerror ", 1)[1].split("\nsteps (", 1)[0]
    assert "gASV" not in error_block  # no base64 anywhere in the error's block
    steps = cli("workflow", "steps", "order-1", "-s", url)
    assert steps.returncode == 0, steps.stderr
    assert "step 2 (charge) failed: DBOSMaxStepRetriesExceeded" in steps.stdout
    assert "3. __main__.PaymentDeclined: card declined for order-1" in steps.stdout


def test_the_fix_loop_resume_refuses_and_retry_runs_the_fixed_code_from_the_failed_step(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path / "shop.sqlite")
    failed = subprocess.run(
        [sys.executable, str(SCRIPT), url], capture_output=True, text=True, timeout=60
    )
    assert "failed: DBOSMaxStepRetriesExceeded" in failed.stdout, failed.stderr
    # Resume would replay the recorded failure: it refuses, changes nothing, points on.
    resumed = cli("workflow", "resume", "order-1", "-s", url)
    assert resumed.returncode == 2
    assert "changes nothing" in resumed.stderr and "workflow retry order-1" in resumed.stderr
    retried = cli("workflow", "retry", "order-1", "-s", url, "--json")
    assert retried.returncode == 0, retried.stderr
    new_id = json.loads(retried.stdout)["workflow_id"]
    fixed = subprocess.run(
        [sys.executable, str(SCRIPT), url, "--fixed", new_id],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "result: paid" in fixed.stdout, fixed.stderr
    assert "reserve ran" not in fixed.stdout  # step 1 was copied, not run again
    original = cli("workflow", "get", "order-1", "-s", url, "--json")
    assert json.loads(original.stdout)["status"] == "ERROR"  # the record is kept
    again = cli("workflow", "retry", new_id, "-s", url)
    assert again.returncode == 1 and "succeeded" in again.stderr
