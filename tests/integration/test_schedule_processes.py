"""Schedules and debouncing across executor processes, on PostgreSQL, in real time.

Worker processes (``tests/support/scripts/schedule_worker.py``) log every execution of a
scheduled or debounced workflow to a side table, past the library, so "ran exactly once"
is counted by what the workflow bodies did, not by the library's own rows.

The three-executor run lasts ``DBOS_TRIO_SCHEDULE_SECONDS`` seconds of ticks (12 by
default, to keep CI short; set 60 for the full-length run the issue describes): the
property — every tick runs exactly once, none is missed — is the same at any length.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
import trio

from dbos_trio import Client

from support.backends import query
from support.queue_fixtures import Script, SideTable, start_script
from support.waiting import HANG_GUARD, wait_until

pytestmark = [
    pytest.mark.postgres_only_module("several executor processes on one PostgreSQL database"),
    pytest.mark.slow,
]

TICK_SECONDS = float(os.environ.get("DBOS_TRIO_SCHEDULE_SECONDS", "12"))


async def workers(
    url: str, count: int, extra: dict[int, dict[str, object]] | None = None
) -> list[Script]:
    scripts = [
        start_script(
            "schedule_worker.py",
            json.dumps({"url": url, "executor_id": f"exec-{n}", **(extra or {}).get(n, {})}),
        )
        for n in range(count)
    ]
    for script in scripts:
        await script.wait_for_line("READY", timeout=60)
    return scripts


async def test_three_executors_run_each_tick_of_a_one_second_schedule_exactly_once(
    system_database_url: str,
) -> None:
    url = system_database_url
    side = SideTable(url)
    side.create()
    scripts = await workers(url, 3)
    try:
        async with Client(url, app_name="sched-mp") as client:
            await client.create_schedule(
                schedule_name="every-second", workflow_name="tick", schedule="* * * * * *"
            )

            async def ticking() -> bool:
                return bool(await side.rows("label = %s", "tick"))

            # Counted from the first tick: how long the executors take to see the new
            # schedule (a poll, later on a loaded machine) is not what is measured.
            await wait_until(ticking, timeout=HANG_GUARD, what="the first tick")
            await trio.sleep(TICK_SECONDS)
            await client.pause_schedule("every-second")
            paused_at = time.time()
            await trio.sleep(3.0)  # one polling interval (1 s), plus the runs in flight
    finally:
        for script in scripts:
            await script.stop()
    runs = await side.rows("label = %s", "tick")
    executions = Counter(row[0] for row in runs)
    ticks = sorted(datetime.fromisoformat(row[3].split(" ", 1)[1]).timestamp() for row in runs)
    stored = await query(
        url,
        "SELECT workflow_uuid, status FROM {t}workflow_status WHERE schedule_name = %s",
        "every-second",
    )
    # Every second from the first tick to the pause (13 at 12 s), less what was due at the
    # pause itself: a tick that an executor fires late, once it has seen the pause, is dropped.
    assert len(ticks) >= TICK_SECONDS - 2
    assert set(executions.values()) == {1}  # every workflow body ran exactly once
    assert ticks == [ticks[0] + n for n in range(len(ticks))]  # and no tick was missed
    assert {status for _, status in stored} == {"SUCCESS"} and len(stored) == len(ticks)
    assert {row[0] for row in runs} == {workflow_id for workflow_id, _ in stored}
    # The pause, made by another process, stopped every executor within one interval.
    assert ticks[-1] <= paused_at + 1.0 + 1.0
    print(f"\n{len(ticks)} ticks, by executor: {Counter(row[3].split()[0] for row in runs)}")


async def test_bounces_from_two_processes_coalesce_onto_one_workflow(
    system_database_url: str, tmp_path: Path
) -> None:
    url = system_database_url
    side = SideTable(url)
    side.create()
    start_file = tmp_path / "start-at"
    # Both bounce during the first second; the second process goes on for two more.
    scripts = await workers(
        url,
        2,
        {
            0: {"bounces": ["shared", 1.5, "a", 20, 0.05, str(start_file)]},
            1: {"bounces": ["shared", 1.5, "b", 60, 0.05, str(start_file)]},
        },
    )
    try:
        # Both are launched (READY): they start bouncing together, however long their
        # start-up took. Written whole by a rename: a worker never reads half of it.
        written = tmp_path / "start-at.tmp"
        written.write_text(repr(time.time() + 0.5))
        written.rename(start_file)
        ids: set[str] = set()
        for script in scripts:
            await script.wait_for_line("BOUNCED", timeout=HANG_GUARD)
            line = next(line for line in script.output().splitlines() if "BOUNCED" in line)
            ids.update(json.loads(line.split(" ", 1)[1]))

        async def all_ran() -> bool:
            statuses = await query(
                url,
                "SELECT status FROM {t}workflow_status WHERE workflow_uuid = ANY(%s)",
                sorted(ids),
            )
            return len(statuses) == len(ids) and all(row[0] == "SUCCESS" for row in statuses)

        # The period, then the release sweep, then the run: waited for, not slept.
        await wait_until(all_ran, timeout=HANG_GUARD, what="the debounced workflow to run")
    finally:
        for script in scripts:
            await script.stop()
    runs = await side.rows("label = %s", "collect")
    assert len(ids) == 1
    assert [(row[0], row[3]) for row in runs] == [(ids.pop(), "b59")]
