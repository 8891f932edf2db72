"""Three executor processes; one is SIGKILLed mid-work; the other two finish its work.

Every process runs ``tests/support/scripts/adopting_worker.py`` with
``Config(heartbeat_interval=0.2, adopt_dead_executors_after=1.0)``. The victim starts the
jobs and stops each one after its first step (between checkpoints); then it is killed.
While it lives it stamps its rows, and nobody adopts them however long they wait;
killed, its rows stop being stamped, so after a second the survivors adopt them (one write that
clears the owner token), claim them from the internal queue and run them on from their
checkpoints. Every step body logs to a side table on its own connection, so "ran once"
is counted outside the library. Then the victim restarts under its old executor id: its
launch finds nothing of its own to recover, and nothing runs again.
"""

from __future__ import annotations

from collections import Counter

import pytest
import trio

from support.backends import query
from support.queue_fixtures import SideTable, start_script

JOBS = 6


async def statuses(url: str) -> dict[str, tuple[str, str]]:
    rows = await query(
        url,
        "SELECT workflow_uuid, status, executor_id FROM {t}workflow_status "
        "WHERE name = %s ORDER BY workflow_uuid",
        "adopt.job",
    )
    return {row[0]: (row[1], row[2]) for row in rows}


async def wait_until_all_succeeded(url: str, timeout: float = 45.0) -> dict[str, tuple[str, str]]:
    with trio.move_on_after(timeout):
        while True:
            found = await statuses(url)
            if len(found) == JOBS and all(s == "SUCCESS" for s, _ in found.values()):
                return found
            await trio.sleep(0.1)
    raise AssertionError(f"the victim's jobs did not all finish: {await statuses(url)}")


@pytest.mark.slow
async def test_two_survivors_finish_a_killed_executors_work_and_its_restart_runs_nothing(
    dbos_url: str,
) -> None:
    side = SideTable(dbos_url)
    side.create()
    victim = start_script("adopting_worker.py", dbos_url, "victim", "victim", str(JOBS))
    survivors = [
        start_script("adopting_worker.py", dbos_url, f"survivor-{n}", "survivor") for n in (1, 2)
    ]
    restarted = None
    try:
        for survivor in survivors:
            await survivor.wait_for_line("READY")
        await victim.wait_for_line("STARTED")
        # Alive, the victim stamps its rows: past the adoption threshold, nobody took them.
        await trio.sleep(2.0)
        assert set((await statuses(dbos_url)).values()) == {("PENDING", "victim")}
        victim.kill()
        await victim.wait()
        finished = await wait_until_all_succeeded(dbos_url)
        assert {executor for _, executor in finished.values()} <= {"survivor-1", "survivor-2"}
        rows = await side.rows()
        ran = Counter((workflow_id, label) for workflow_id, label, *_ in rows)
        assert set(ran.values()) == {1}, ran  # no step body ran twice
        assert len(ran) == 3 * JOBS
        first_by = {wid: value for wid, label, _, value, *_ in rows if label == "first"}
        assert set(first_by.values()) == {"victim"}  # replayed by the survivors, not re-run

        restarted = start_script("adopting_worker.py", dbos_url, "victim", "restart")
        await restarted.wait_for_line("RECOVERED")
        assert "RECOVERED 0" in restarted.output()
        # A heartbeat and an adoption pass of everyone later, still nothing ran again.
        await trio.sleep(1.5)
        assert len(await side.rows()) == 3 * JOBS
        assert await statuses(dbos_url) == finished
    finally:
        for script in (victim, *survivors, *([restarted] if restarted else [])):
            await script.stop()
