"""Concurrent tasks in a workflow replay exactly: durable nurseries, gather, the race.

Each fan-out pattern of :mod:`support.fanout_apps` runs ``RUNS`` times (50 by default;
``DBOS_TRIO_DETERMINISM_RUNS`` to change it) with random step latencies, so its tasks
reach their durable calls in a different order every time. After each run, a recovery
(the row re-run from its checkpoints, as after a crash) and a fork from a step chosen at
random must return the original result, and in a few runs forks from *every* step do.
The SIGKILL version is tests/integration/test_fanout_crash.py.

Also here: what the body outside a durable nursery keeps (ids at the call), the refusal
of a durable call from a plain Trio task, ``start`` handing its turn to the new task,
gather/wait_all/first_completed under the crash-injection kit, and the race replayed
without running its losers.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from dbos_trio import (
    DBOS,
    Config,
    DBOSException,
    DBOSUnorderedTaskError,
    SetWorkflowID,
)
from dbos_trio.testing import CrashRecovery, crash_at_every_checkpoint, sqlite_url

from support.backends import steps_of
from support.dbos_fixtures import reexecute
from support.fanout_apps import PATTERNS, build_fanout_app, expected

RUNS = int(os.environ.get("DBOS_TRIO_DETERMINISM_RUNS", "50"))
EVERY_STEP_RUNS = 2


@pytest.mark.parametrize("pattern", PATTERNS)
async def test_every_fanout_pattern_replays_its_own_results_on_recovery_and_fork(
    dbos_url: str, pattern: str
) -> None:
    app = build_fanout_app(dbos_url)
    choose = random.Random()
    want = expected(pattern)
    async with app.dbos.launched():
        for run in range(RUNS):
            workflow_id = f"{pattern}-{run}"
            with SetWorkflowID(workflow_id):
                assert await app.fanout(pattern) == want, f"run {run}"
            recorded = [row[0] for row in await steps_of(dbos_url, workflow_id)]
            assert recorded == list(range(1, len(recorded) + 1))
            recovered = await reexecute(app.dbos, dbos_url, app.fanout, workflow_id)
            assert recovered == want, f"run {run}: recovery"
            forks = (
                range(1, len(recorded) + 2)
                if run < EVERY_STEP_RUNS
                else [choose.randint(1, len(recorded) + 1)]
            )
            for start in forks:
                forked = await app.dbos.fork_workflow(workflow_id, start)
                assert await forked.get_result() == want, f"run {run}: fork from {start}"


async def test_a_replay_runs_only_the_steps_after_its_start(dbos_url: str) -> None:
    app = build_fanout_app(dbos_url)
    async with app.dbos.launched():
        with SetWorkflowID("once"):
            await app.fanout("varying")
        ran_first = app.runs.copy()
        assert set(ran_first.values()) == {1}
        assert await reexecute(app.dbos, dbos_url, app.fanout, "once") == expected("varying")
        # Every checkpoint replayed: no step body ran again.
        assert app.runs == ran_first
        forked = await app.dbos.fork_workflow("once", 20)
        assert await forked.get_result() == expected("varying")
        rerun = app.runs - ran_first
        assert sum(rerun.values()) == len(ran_first) - 19  # steps 20.. ran again, once each


async def test_the_body_outside_a_durable_nursery_keeps_taking_ids_at_the_call(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.step(name="s")
    async def s(i: int) -> int:
        await trio.sleep(0.001 * max(0, 3 - i))
        return i

    @dbos.workflow()
    async def body() -> list[int]:
        calls = [s(i) for i in range(3)]  # ids 1, 2, 3, taken here
        out = [0, 0, 0]

        async def run(i: int) -> None:
            out[i] = await calls[i]

        async with trio.open_nursery() as nursery:  # a plain nursery is fine for these
            for i in (2, 1, 0):
                nursery.start_soon(run, i)
        return [*out, await s(7)]

    async with dbos.launched():
        with SetWorkflowID("at-call"):
            assert await body() == [0, 1, 2, 7]
    recorded = await steps_of(dbos_url, "at-call", "function_id, output")
    outputs = [(fid, dbos_value(output)) for fid, output in recorded]
    assert outputs == [(1, 0), (2, 1), (3, 2), (4, 7)]


def dbos_value(output: str) -> Any:
    import base64
    import pickle

    return pickle.loads(base64.b64decode(output))


async def test_a_step_called_from_a_plain_trio_task_is_refused_by_name(
    make_dbos: Callable[..., DBOS],
) -> None:
    dbos = make_dbos()

    @dbos.step(name="fetch")
    async def fetch() -> int:
        return 1

    @dbos.workflow()
    async def plain() -> None:
        async def helper() -> None:
            await fetch()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(helper)

    async with dbos.launched():
        with pytest.raises(ExceptionGroup) as raised:
            await plain()
    [error] = raised.value.exceptions
    assert isinstance(error, DBOSUnorderedTaskError)
    assert "fetch" in str(error) and "dbos.open_nursery()" in str(error)


async def test_with_unordered_tasks_warn_the_call_runs_and_one_warning_is_logged(
    make_dbos: Callable[..., DBOS], caplog: pytest.LogCaptureFixture
) -> None:
    dbos = make_dbos(unordered_tasks="warn")

    @dbos.step(name="fetch")
    async def fetch(i: int) -> int:
        return i

    @dbos.workflow()
    async def plain() -> list[int]:
        out = [0, 0]

        async def helper(i: int) -> None:
            out[i] = await fetch(i)

        async with trio.open_nursery() as nursery:
            for i in range(2):
                nursery.start_soon(helper, i)
        return out

    async with dbos.launched():
        assert await plain() == [0, 1]
    warnings = [r for r in caplog.records if "trio.open_nursery()" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING


async def test_start_lends_the_starters_turn_until_the_task_reports_started(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.step(name="s")
    async def s(label: str) -> str:
        return label

    @dbos.workflow()
    async def starter() -> list[str]:
        seen: list[str] = []

        async def service(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            seen.append(await s("setup"))  # the starter waits: this is its turn
            task_status.started()
            seen.append(await s("served"))

        async with dbos.open_nursery() as nursery:
            await nursery.start(service)
            seen.append(await s("after start"))
        return seen

    async with dbos.launched():
        with SetWorkflowID("starter"):
            await starter()
        assert await reexecute(dbos, dbos_url, starter, "starter") == await starter_result(
            dbos, "starter"
        )
    recorded = await steps_of(dbos_url, "starter", "function_id, output")
    labels = [dbos_value(output) for _, output in recorded]
    # setup in the starter's turn, then the starter and the task in spawn order.
    assert labels == ["setup", "after start", "served"]


async def starter_result(dbos: DBOS, workflow_id: str) -> Any:
    handle = await dbos.retrieve_workflow(workflow_id)
    return await handle.get_result()


async def test_a_task_of_another_nursery_cannot_start_tasks_in_this_one(
    make_dbos: Callable[..., DBOS],
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def misuse() -> None:
        async with dbos.open_nursery() as outer:

            async def inner_task() -> None:
                outer.start_soon(trio.sleep, 0)

            async with dbos.open_nursery() as inner:
                inner.start_soon(inner_task)

    async with dbos.launched():
        with pytest.raises(ExceptionGroup) as raised:
            await misuse()
    assert raised.group_contains(
        DBOSException, match="only by the nursery's own block or tasks", depth=None
    )


async def test_outside_a_workflow_a_durable_nursery_is_a_plain_one(
    make_dbos: Callable[..., DBOS],
) -> None:
    dbos = make_dbos()
    done: list[int] = []

    async def work(i: int) -> None:
        done.append(i)

    async with dbos.launched(), dbos.open_nursery() as nursery:
        for i in range(3):
            nursery.start_soon(work, i)
    assert sorted(done) == [0, 1, 2]


async def test_a_sibling_waiting_outside_durable_calls_holding_the_turn_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    dbos = DBOS(Config(app_name="turns", database_url=sqlite_url(tmp_path / "db.sqlite")))
    released = trio.Event()

    @dbos.step(name="s")
    async def s(i: int) -> int:
        return i

    @dbos.workflow()
    async def stuck() -> int:
        async def first() -> None:
            await released.wait()  # holds the turn, waiting outside durable calls
            await s(1)

        async def second() -> None:
            await s(2)  # waits for the turn first() holds

        async with dbos.open_nursery() as nursery:
            nursery.start_soon(first)
            nursery.start_soon(second)
        return 0

    async with dbos.launched():
        handle = await dbos.start_workflow(stuck)
        await trio.sleep(31)  # virtual: past the warning
        warned = [r.getMessage() for r in caplog.records if "for its turn" in r.getMessage()]
        assert warned and "s has waited 30 s" in warned[0] and "first" in warned[0]
        released.set()
        assert await handle.get_result() == 0


# --- gather, wait_all, the race: the crash-injection kit ------------------------------


def race_app(config: Config) -> tuple[DBOS, dict[str, list[Any]]]:
    dbos = DBOS(config)
    ran: dict[str, list[Any]] = {"steps": []}

    @dbos.step(name="work")
    async def work(i: int, delay: float) -> int:
        ran["steps"].append(i)
        await trio.sleep(delay)
        return 10 * i

    @dbos.workflow(name="child")
    async def child(i: int) -> int:
        return await work(i, 0)

    @dbos.workflow(name="combined")
    async def combined() -> list[Any]:
        gathered = await dbos.gather(work(1, 0.02), work(2, 0.01), work(3, 0))
        handles = [await dbos.start_workflow(child, i) for i in (4, 5)]
        waited = await dbos.wait_all(handles)
        index, value = await dbos.first_completed(work(6, 5.0), work(7, 0.01))
        try:
            await dbos.first_completed(dbos.recv("never"), timeout=0.5)
            timed_out = False
        except TimeoutError:
            timed_out = True
        return [gathered, waited, index, value, timed_out]

    ran["workflow"] = [combined]
    return dbos, ran


async def test_gather_wait_all_and_the_race_replay_under_crashes_at_every_checkpoint(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    apps: list[tuple[DBOS, dict[str, list[Any]]]] = []

    def build(config: Config) -> DBOS:
        apps.append(race_app(config))
        return apps[-1][0]

    async def start(dbos: DBOS) -> None:
        await dbos.start_workflow(apps[-1][1]["workflow"][0])

    def check(report: CrashRecovery) -> None:
        assert report.status == "SUCCESS", report
        assert report.result == [[10, 20, 30], [40, 50], 1, 70, True]

    reports = await crash_at_every_checkpoint(build, start, check)
    assert len(reports) > 10


async def test_a_recorded_race_returns_its_winner_without_running_the_others(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()
    ran: list[str] = []

    @dbos.step(name="fast")
    async def fast() -> str:
        ran.append("fast")
        return "fast"

    @dbos.step(name="slow")
    async def slow() -> str:
        ran.append("slow")
        await trio.sleep(30)
        return "slow"

    @dbos.workflow()
    async def race() -> tuple[int, Any]:
        return await dbos.first_completed(slow(), fast())

    async with dbos.launched():
        with SetWorkflowID("race"):
            assert await race() == (1, "fast")
        assert sorted(ran) == ["fast", "slow"]  # both started; slow was cancelled
        ran.clear()
        assert await reexecute(dbos, dbos_url, race, "race") == (1, "fast")
    assert ran == []  # the winner replayed its checkpoint; the loser never started
    names = [row[1] for row in await steps_of(dbos_url, "race")]
    assert names == ["fast", "DBOS.asyncio_wait"]


async def test_a_race_competitor_making_durable_calls_of_its_own_is_refused(
    make_dbos: Callable[..., DBOS],
) -> None:
    dbos = make_dbos()

    @dbos.step(name="inner")
    async def inner() -> int:
        return 1

    async def two_steps() -> int:
        return await inner() + await inner()

    @dbos.workflow()
    async def race() -> Any:
        return await dbos.first_completed(two_steps(), dbos.sleep(60))

    async with dbos.launched():
        with pytest.raises(DBOSException, match="competitor 0 of first_completed"):
            await race()
