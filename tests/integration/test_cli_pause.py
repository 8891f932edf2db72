"""``dbos-trio workflow pause|unpause`` and ``queue pause|unpause``, as real subprocesses
on each backend: what each changes in the rows, what it prints, and its exit code when it
cannot apply (a finished workflow, 2; an unknown id, 3; an unknown queue, 2), with nothing
changed."""

from __future__ import annotations

import json
import subprocess
import sys

from support.backends import execute, query


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args], capture_output=True, text=True, timeout=60
    )


async def plant(url: str) -> None:
    await execute(url, "INSERT INTO {t}queues (name, concurrency) VALUES ('jobs', 3)")
    for workflow_id, status, queue in (("waiting", "ENQUEUED", "jobs"), ("done", "SUCCESS", None)):
        await execute(
            url,
            "INSERT INTO {t}workflow_status (workflow_uuid, status, name, queue_name, "
            "created_at, updated_at) VALUES (%s, %s, 'w', %s, 1, 1)",
            workflow_id,
            status,
            queue,
        )


async def row(url: str, workflow_id: str) -> tuple[object, ...]:
    [found] = await query(
        url,
        "SELECT status, queue_name FROM {t}workflow_status WHERE workflow_uuid = %s",
        workflow_id,
    )
    return tuple(found)


async def test_workflow_pause_and_unpause_change_the_row_and_say_what_they_did(
    system_database_url: str,
) -> None:
    url = system_database_url
    await plant(url)
    paused = run_cli("workflow", "pause", "waiting", "-s", url)
    assert paused.returncode == 0, paused.stderr
    assert "paused waiting" in paused.stdout and "workflow unpause waiting" in paused.stdout
    assert await row(url, "waiting") == ("PAUSED", "jobs")
    again = run_cli("workflow", "pause", "waiting", "-s", url, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {
        "workflow_id": "waiting",
        "status": "PAUSED",
        "changed": False,
    }
    listed = run_cli("workflow", "list", "-s", url, "--status", "paused", "--json")
    assert [w["workflow_id"] for w in json.loads(listed.stdout)] == ["waiting"]
    shown = json.loads(run_cli("workflow", "get", "waiting", "-s", url, "--json").stdout)
    assert shown["status"] == "PAUSED"

    unpaused = run_cli("workflow", "unpause", "waiting", "-s", url)
    assert unpaused.returncode == 0, unpaused.stderr
    assert "unpaused waiting: it is ENQUEUED on queue jobs" in unpaused.stdout
    assert await row(url, "waiting") == ("ENQUEUED", "jobs")
    not_paused = run_cli("workflow", "unpause", "waiting", "-s", url)
    assert not_paused.returncode == 0 and "not paused (nothing changed)" in not_paused.stdout

    finished = run_cli("workflow", "pause", "done", "-s", url)
    assert finished.returncode == 2
    assert "SUCCESS: it has finished, so there is nothing to pause" in finished.stderr
    assert run_cli("workflow", "unpause", "done", "-s", url).returncode == 2
    assert await row(url, "done") == ("SUCCESS", None)
    assert run_cli("workflow", "pause", "nobody", "-s", url).returncode == 3
    assert run_cli("workflow", "unpause", "nobody", "-s", url).returncode == 3


async def test_queue_pause_and_unpause_keep_the_queues_limit_and_refuse_an_unknown_queue(
    system_database_url: str,
) -> None:
    url = system_database_url
    await plant(url)
    paused = run_cli("queue", "pause", "jobs", "-s", url)
    assert paused.returncode == 0, paused.stderr
    assert "paused queue jobs" in paused.stdout and "queue unpause jobs" in paused.stdout
    assert await query(url, "SELECT concurrency FROM {t}queues WHERE name = 'jobs'") == [(-3,)]
    again = run_cli("queue", "pause", "jobs", "-s", url, "--json")
    assert json.loads(again.stdout) == {"queue_name": "jobs", "paused": True, "changed": False}
    unpaused = run_cli("queue", "unpause", "jobs", "-s", url)
    assert unpaused.returncode == 0, unpaused.stderr
    assert "unpaused queue jobs" in unpaused.stdout
    assert await query(url, "SELECT concurrency FROM {t}queues WHERE name = 'jobs'") == [(3,)]
    unknown = run_cli("queue", "pause", "nowhere", "-s", url)
    assert unknown.returncode == 2 and "no queue 'nowhere'" in unknown.stderr
    assert run_cli("queue", "unpause", "nowhere", "-s", url).returncode == 2
