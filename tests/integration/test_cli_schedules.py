"""``dbos-trio schedule ...``, run as a real subprocess against a SQLite system database."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from dbos_trio import DBOS, Config
from dbos_trio.testing import sqlite_url


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args], capture_output=True, text=True, timeout=60
    )


def ok(*args: str) -> Any:
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done.stdout


async def test_list_get_pause_resume_trigger_backfill_and_delete_a_schedule(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path / "cli.sqlite")
    dbos = DBOS(Config(app_name="cli-sched", database_url=url))

    @dbos.workflow(name="nightly")
    async def nightly(scheduled_time: datetime, context: Any) -> None:
        pass

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="nightly-report",
            workflow=nightly,
            schedule="0 3 * * *",
            context={"to": "ops"},
            cron_timezone="Europe/Paris",
        )
    [listed] = ok("schedule", "list", "-s", url, "--json", "--allow-pickle")
    assert listed["schedule_name"] == "nightly-report" and listed["context"] == {"to": "ops"}
    [untrusted] = ok("schedule", "list", "-s", url, "--json")  # the pickle is not decoded
    assert (
        untrusted["schedule_name"] == "nightly-report" and untrusted["context"] != listed["context"]
    )
    assert "Europe/Paris" in ok("schedule", "list", "-s", url)
    assert ok("schedule", "get", "nightly-report", "-s", url, "--json")["status"] == "ACTIVE"
    ok("schedule", "pause", "nightly-report", "-s", url)
    assert ok("schedule", "list", "-S", "paused", "-s", url, "--json")[0]["status"] == "PAUSED"
    ok("schedule", "resume", "nightly-report", "-s", url)
    assert ok("schedule", "get", "nightly-report", "-s", url, "--json")["status"] == "ACTIVE"
    triggered = ok("schedule", "trigger", "nightly-report", "-s", url, "--json")
    assert triggered["workflow_id"].startswith("sched-nightly-report-trigger-")
    filled = ok(
        "schedule", "backfill", "nightly-report", "2026-03-01T00:00:00Z", "2026-03-04T00:00:00Z",
        "-s", url, "--json",
    )  # fmt: skip
    assert filled["workflow_ids"] == [
        f"sched-nightly-report-2026-03-0{day}T03:00:00+01:00" for day in (1, 2, 3)
    ]
    runs = ok("workflow", "list", "-s", url, "--json", "-l", "10")
    assert len(runs) == 4
    ok("schedule", "delete", "nightly-report", "-s", url)
    assert ok("schedule", "list", "-s", url, "--json") == []
    missing = cli("schedule", "pause", "nightly-report", "-s", url)
    assert missing.returncode == 1 and "no schedule 'nightly-report'" in missing.stderr
    bad = cli("schedule", "backfill", "x", "yesterday", "today", "-s", url)
    assert bad.returncode == 1 and "ISO 8601" in bad.stderr
