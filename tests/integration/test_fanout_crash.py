"""A fan-out workflow SIGKILLed at a random point recovers with its own results.

A real process runs the ``fifty`` pattern of :mod:`support.fanout_apps` (50 tasks of two
steps, each step sleeping a random moment) and is SIGKILLed once a random number of its
steps are checkpointed; a fresh launch with the same executor id recovers the workflow,
whose tasks now reach their calls in another order — and must still each get their own
checkpoints back. ``DBOS_TRIO_KILL_RUNS`` runs (10 by default, in CI).
"""

from __future__ import annotations

import os
import random
import time

from support.backends import query
from support.fanout_apps import build_fanout_app, expected
from support.queue_fixtures import start_script
from support.waiting import wait_until

KILL_RUNS = int(os.environ.get("DBOS_TRIO_KILL_RUNS", "10"))
STEPS = 100  # fifty tasks, two steps each


async def checkpoints(url: str, workflow_id: str) -> int:
    rows = await query(
        url, "SELECT count(*) FROM {t}operation_outputs WHERE workflow_uuid = %s", workflow_id
    )
    return int(rows[0][0])


async def kill_after(url: str, workflow_id: str, steps: int) -> None:
    """Run the workflow in a process of its own, SIGKILL it once ``steps`` are recorded."""
    crashed = start_script("fanout_crash.py", url, "fan-exec", workflow_id, "fifty")
    try:

        async def enough() -> bool:
            return await checkpoints(url, workflow_id) >= steps

        await wait_until(enough, timeout=60, what=f"{steps} checkpoints")
    finally:
        crashed.kill()
    assert await crashed.wait() == -9, crashed.output()


async def test_a_fanout_killed_at_a_random_step_recovers_its_own_results(
    dbos_url: str,
) -> None:
    choose = random.Random()
    for run in range(KILL_RUNS):
        workflow_id = f"killed-{run}"
        await kill_after(dbos_url, workflow_id, choose.randint(1, STEPS - 1))
        relaunched_ms = int(time.time() * 1000)
        app = build_fanout_app(dbos_url, executor_id="fan-exec")
        async with app.dbos.launched():
            handle = await app.dbos.retrieve_workflow(workflow_id)
            assert await handle.get_result() == expected("fifty"), f"run {run}"
        assert await checkpoints(dbos_url, workflow_id) == STEPS
        # Each step the killed process recorded replayed; each other one ran once here.
        # (Commits it sent just before it died may land until recovery claims the row —
        # the claim's new owner token fences out later ones — so they are counted from
        # the table, by when they completed.)
        [(recorded,)] = await query(
            dbos_url,
            "SELECT count(*) FROM {t}operation_outputs WHERE workflow_uuid = %s "
            "AND completed_at_epoch_ms < %s",
            workflow_id,
            relaunched_ms,
        )
        assert sum(app.runs.values()) == STEPS - recorded, f"run {run}"
        assert set(app.runs.values()) <= {1}
