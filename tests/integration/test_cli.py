"""The dbos-trio command line, run as a real subprocess against a real database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dbos_trio import DBOS, Config


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_migrate_creates_a_schema_the_library_then_accepts(empty_database_url: str) -> None:
    migrated = run_cli("migrate", "--database-url", empty_database_url)
    assert migrated.returncode == 0, migrated.stderr
    listing = run_cli("workflow", "list", "--database-url", empty_database_url, "--json")
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout) == []


def test_a_command_on_an_unmigrated_database_fails_with_a_clear_message(
    empty_database_url: str,
) -> None:
    result = run_cli("workflow", "list", "--database-url", empty_database_url)
    assert result.returncode == 1
    assert "dbos-trio:" in result.stderr
    assert "never creates or migrates" in result.stderr


async def test_list_get_steps_fork_cancel_and_delete_show_and_change_stored_workflows(
    empty_database_url: str,
) -> None:
    dbos = DBOS(Config(app_name="cli-test", database_url=empty_database_url))

    @dbos.step()
    async def double(x: int) -> int:
        return 2 * x

    @dbos.workflow()
    async def twice(x: int) -> int:
        return await double(await double(x))

    async with dbos.launched():
        handle = await dbos.start_workflow(twice, 3)
        assert await handle.get_result() == 12
    workflow_id = handle.workflow_id
    url = empty_database_url

    listed = json.loads(run_cli("workflow", "list", "-s", url, "--json").stdout)
    assert [(w["workflow_id"], w["name"], w["status"]) for w in listed] == [
        (
            workflow_id,
            "test_list_get_steps_fork_cancel_and_delete_show_and_change_stored_workflows.<locals>.twice",
            "SUCCESS",
        )
    ]
    table = run_cli("workflow", "list", "-s", url).stdout
    assert workflow_id in table and "SUCCESS" in table

    got = json.loads(run_cli("workflow", "get", workflow_id, "-s", url, "--json").stdout)
    assert got[0]["output"] == 12

    steps = json.loads(run_cli("workflow", "steps", workflow_id, "-s", url, "--json").stdout)
    assert [(s["function_id"], s["output"]) for s in steps] == [(1, 6), (2, 12)]

    forked = run_cli("workflow", "fork", workflow_id, "--step", "2", "-s", url, "--json")
    assert forked.returncode == 0, forked.stderr
    forked_id = json.loads(forked.stdout)["workflow_id"]
    forked_status = json.loads(run_cli("workflow", "get", forked_id, "-s", url, "--json").stdout)
    assert forked_status[0]["status"] == "ENQUEUED"
    assert forked_status[0]["forked_from"] == workflow_id
    forked_steps = json.loads(run_cli("workflow", "steps", forked_id, "-s", url, "--json").stdout)
    assert [s["function_id"] for s in forked_steps] == [1]

    assert run_cli("workflow", "cancel", forked_id, "-s", url).returncode == 0
    cancelled = json.loads(run_cli("workflow", "get", forked_id, "-s", url, "--json").stdout)
    assert cancelled[0]["status"] == "CANCELLED"

    assert run_cli("workflow", "delete", forked_id, "-s", url).returncode == 0
    missing = run_cli("workflow", "get", forked_id, "-s", url)
    assert missing.returncode == 1


def test_migrate_and_list_work_on_a_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    assert run_cli("workflow", "list", "--database-url", url).returncode == 1  # not there yet
    migrated = run_cli("migrate", "--database-url", url)
    assert migrated.returncode == 0, migrated.stderr
    listing = run_cli("workflow", "list", "--database-url", url, "--json")
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout) == []
