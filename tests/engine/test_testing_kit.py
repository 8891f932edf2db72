"""dbos_trio.testing: virtual time on SQLite, and crash injection at every checkpoint.

The virtual-time tests run under pytest-trio's ``autojump_clock`` (MockClock with
autojump_threshold=0). What makes days of durable time cost no real time is the kit's
pacing of the background sweeps, so that is what they observe: how many times the timeout
sweep ran (``support.sweeps``), never the real seconds a run took (which depend on the
machine's load). The crash tests count step-body executions in the
test's own memory, which survives the simulated crash the way a side effect in the outside
world would.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from dbos_trio import (
    DBOS,
    Config,
    DBOSAwaitedWorkflowCancelledError,
    SetWorkflowID,
    SetWorkflowTimeout,
)
from dbos_trio._core.admission import RateLimit
from dbos_trio.testing import (
    CrashPoint,
    CrashPointNotReached,
    CrashRecovery,
    VirtualTimeError,
    crash_at_every_checkpoint,
    launched,
    run_until_crash,
    sqlite_url,
    temporary_postgres_url,
)

from support.pg_support import admin_url
from support.sweeps import count_timeout_sweeps, most_ticks

APP = "kit-tests"
MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0


def config_for(path: Path, **fields: Any) -> Config:
    return Config(app_name=APP, database_url=sqlite_url(path), **fields)


def starts_of(path: Path, prefix: str) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        found = conn.execute(
            "SELECT started_at_epoch_ms FROM workflow_status WHERE workflow_uuid LIKE ? "
            "ORDER BY started_at_epoch_ms",
            (prefix + "%",),
        ).fetchall()
    finally:
        conn.close()
    return [row[0] for row in found]


# --- the four virtual-time scenarios ------------------------------------------------------


async def week_of_sleep(path: Path) -> float:
    """A workflow sleeping 7 days returns after exactly 7 virtual days; its virtual time."""
    dbos = DBOS(config_for(path))

    @dbos.workflow()
    async def sleeper() -> str:
        await dbos.sleep(7 * DAY)
        return "awake"

    async with launched(dbos):
        began = trio.current_time()
        handle = await dbos.start_workflow(sleeper)
        assert await handle.get_result() == "awake"
        return trio.current_time() - began


async def hour_of_recv(path: Path) -> float:
    """recv(timeout=1 h) returns None after an hour; a message sent at 30 min arrives. The
    virtual time of both."""
    dbos = DBOS(config_for(path))

    @dbos.workflow()
    async def receiver() -> Any:
        return await dbos.recv("topic", timeout_seconds=HOUR)

    @dbos.workflow()
    async def sender(destination: str) -> None:
        await dbos.sleep(30 * MINUTE)
        await dbos.send(destination, "hello", "topic")

    async with launched(dbos):
        began = first = trio.current_time()
        lonely = await dbos.start_workflow(receiver)
        assert await lonely.get_result() is None
        waited = trio.current_time() - began
        assert HOUR <= waited < HOUR + 1
        began = trio.current_time()
        waiting = await dbos.start_workflow(receiver)
        await dbos.start_workflow(sender, waiting.workflow_id)
        assert await waiting.get_result() == "hello"
        assert 30 * MINUTE <= trio.current_time() - began < 30 * MINUTE + 1
        return trio.current_time() - first


async def rate_limited_drain(path: Path) -> float:
    """50 items through RateLimit(5, 60 s): all results, never more than 5 starts a minute."""
    dbos = DBOS(config_for(path))

    @dbos.workflow()
    async def square(i: int) -> int:
        return i * i

    queue = dbos.register_queue("limited", limiter=RateLimit(5, 60.0))
    async with launched(dbos):
        began = trio.current_time()
        handles = []
        for i in range(50):
            with SetWorkflowID(f"item-{i:02d}"):
                handles.append(await queue.enqueue(square, i))
        assert [await handle.get_result() for handle in handles] == [i * i for i in range(50)]
        drained = trio.current_time() - began
    starts = starts_of(path, "item-")
    assert len(starts) == 50
    for index, start in enumerate(starts):
        in_window = [s for s in starts[index:] if s < start + 60_000]
        assert len(in_window) <= 5, (index, in_window)
    assert starts[-1] - starts[0] >= 9 * 60_000  # ten windows at the least
    return drained


async def day_long_timeout(path: Path) -> float:
    """A workflow timed out after 1 day is CANCELLED at 1 virtual day, mid-sleep."""
    dbos = DBOS(config_for(path))

    @dbos.workflow()
    async def too_slow() -> str:
        await dbos.sleep(2 * DAY)
        return "finished"

    async with launched(dbos):
        began = trio.current_time()
        with SetWorkflowTimeout(DAY):
            handle = await dbos.start_workflow(too_slow)
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        elapsed = trio.current_time() - began
        assert (await handle.get_status()).status == "CANCELLED"
        assert DAY - 0.01 <= elapsed < DAY + 1  # the deadline is kept in whole ms
        return elapsed


@pytest.mark.parametrize(
    "scenario",
    [week_of_sleep, hour_of_recv, rate_limited_drain, day_long_timeout],
    ids=["a-week-of-sleep", "an-hour-of-recv", "a-rate-limited-drain", "a-day-long-timeout"],
)
async def test_each_scenario_is_paced_by_the_kit_not_swept_every_virtual_second(
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scenario: Callable[[Path], Awaitable[float]],
) -> None:
    # What makes virtual days cost no real time is the kit's pacing: the background sweeps
    # tick every few virtual minutes, not every virtual second. Count them.
    ticks = count_timeout_sweeps(monkeypatch)
    span = await scenario(tmp_path / "db.sqlite")
    assert 1 <= ticks[0] <= most_ticks(span)


async def test_all_four_scenarios_at_once_are_paced_and_keep_their_virtual_times(
    autojump_clock: trio.testing.MockClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = count_timeout_sweeps(monkeypatch)
    virtual: dict[str, float] = {}

    async def run(scenario: Callable[[Path], Awaitable[float]]) -> None:
        virtual[scenario.__name__] = await scenario(tmp_path / f"{scenario.__name__}.sqlite")

    async with trio.open_nursery() as nursery:
        for scenario in (week_of_sleep, hour_of_recv, rate_limited_drain, day_long_timeout):
            nursery.start_soon(run, scenario)
    assert 4 <= ticks[0] <= most_ticks(max(virtual.values()), launches=4)
    assert virtual["week_of_sleep"] == pytest.approx(7 * DAY, abs=1)
    assert virtual["day_long_timeout"] == pytest.approx(DAY, abs=1)


async def test_postgres_is_refused_under_an_autojumping_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    dbos = DBOS(Config(app_name=APP, database_url="postgresql://postgres@127.0.0.1:1/none"))
    with pytest.raises(VirtualTimeError):
        async with launched(dbos):
            pass


# --- crash injection ------------------------------------------------------------------------


@attrs.define
class FiveSteps:
    """A workflow of five steps; each body counts its runs, and the runs that happened
    although its own checkpoint was already committed (which must never happen)."""

    dbos: DBOS
    workflow: Callable[[], Awaitable[int]]
    runs: Counter[int] = attrs.field(factory=Counter)
    rerun_after_checkpoint: Counter[int] = attrs.field(factory=Counter)


def five_steps(config: Config) -> FiveSteps:
    dbos = DBOS(config)
    runs: Counter[int] = Counter()
    late: Counter[int] = Counter()

    def make_step(number: int) -> Callable[[], Awaitable[int]]:
        @dbos.step(name=f"step{number}")
        async def body() -> int:
            runs[number] += 1
            workflow_id = dbos.workflow_id
            assert workflow_id is not None
            recorded = {s.function_id for s in await dbos.list_workflow_steps(workflow_id)}
            if dbos.step_id in recorded:
                late[number] += 1
            return number

        return body

    steps = [make_step(number) for number in range(1, 6)]

    @dbos.workflow()
    async def five() -> int:
        total = 0
        for run_step in steps:
            total += await run_step()
        return total

    return FiveSteps(dbos, five, runs, late)


async def test_a_five_step_workflow_crashed_at_each_checkpoint_runs_each_step_once() -> None:
    apps: list[FiveSteps] = []

    def build(config: Config) -> DBOS:
        apps.append(five_steps(config))
        return apps[-1].dbos

    async def start(dbos: DBOS) -> None:
        await dbos.start_workflow(apps[-1].workflow)

    def check(report: CrashRecovery) -> None:
        app = apps[-1]
        assert (report.status, report.result, report.error) == ("SUCCESS", 15, None)
        assert app.runs == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1}), report.crashed_at
        assert not app.rerun_after_checkpoint, report.crashed_at

    reports = await crash_at_every_checkpoint(build, start, check)
    kinds = [(r.crashed_at.kind, r.crashed_at.function_id, r.crashed_before) for r in reports]
    assert kinds == [
        ("start", None, False),
        *[("step", number, False) for number in range(1, 6)],
        ("outcome", None, False),
        ("outcome", None, True),
    ]
    assert [len(r.committed) for r in reports] == [1, 2, 3, 4, 5, 6, 7, 6]


async def test_a_queued_workflow_crashed_at_each_checkpoint_recovers_on_its_queue() -> None:
    apps: list[FiveSteps] = []
    queues: list[Any] = []

    def build(config: Config) -> DBOS:
        apps.append(five_steps(config))
        queues.append(apps[-1].dbos.register_queue("work"))
        return apps[-1].dbos

    async def start(dbos: DBOS) -> None:
        await queues[-1].enqueue(apps[-1].workflow)

    def check(report: CrashRecovery) -> None:
        assert (report.status, report.result) == ("SUCCESS", 15)
        assert apps[-1].runs == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1})

    reports = await crash_at_every_checkpoint(build, start, check)
    assert [r.crashed_at.kind for r in reports][:3] == ["start", "dequeue", "step"]


async def test_a_crash_after_step_three_leaves_three_checkpoints_and_recovery_runs_the_rest(
    tmp_path: Path,
) -> None:
    app = five_steps(config_for(tmp_path / "db.sqlite"))
    async with run_until_crash(app.dbos, CrashPoint.after_step("wf", 3)) as run:
        with SetWorkflowID("wf"):
            await app.dbos.start_workflow(app.workflow)
        await run.wait()
        raise AssertionError("the block is cancelled at the crash")
    assert run.crash is not None and (run.crash.kind, run.crash.function_id) == ("step", 3)
    assert app.runs == Counter({1: 1, 2: 1, 3: 1})
    # Read before the relaunch, whose recovery may run step 4 before a listing could look.
    with closing(sqlite3.connect(tmp_path / "db.sqlite")) as conn:
        recorded = conn.execute(
            "SELECT function_id FROM operation_outputs WHERE workflow_uuid = 'wf' ORDER BY 1"
        ).fetchall()
    assert recorded == [(1,), (2,), (3,)]
    async with launched(app.dbos):
        handle = await app.dbos.retrieve_workflow("wf")
        assert await handle.get_result() == 15
    assert app.runs == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1})


async def test_a_crash_before_a_steps_checkpoint_runs_that_step_again(tmp_path: Path) -> None:
    app = five_steps(config_for(tmp_path / "db.sqlite"))
    async with run_until_crash(app.dbos, CrashPoint.before_step("wf", 3)) as run:
        with SetWorkflowID("wf"):
            await app.dbos.start_workflow(app.workflow)
        await run.wait()
    assert run.crashed_before
    async with launched(app.dbos):
        assert await (await app.dbos.retrieve_workflow("wf")).get_result() == 15
    # At least once: the body ran, its checkpoint was lost, so it ran again.
    assert app.runs == Counter({1: 1, 2: 1, 3: 2, 4: 1, 5: 1})
    assert not app.rerun_after_checkpoint


async def test_a_crash_before_the_outcome_leaves_the_workflow_pending_with_every_step(
    tmp_path: Path,
) -> None:
    app = five_steps(config_for(tmp_path / "db.sqlite"))
    async with run_until_crash(app.dbos, CrashPoint.before_outcome("wf")) as run:
        with SetWorkflowID("wf"):
            await app.dbos.start_workflow(app.workflow)
        await run.wait()
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    status = conn.execute("SELECT status FROM workflow_status WHERE workflow_uuid = 'wf'")
    assert status.fetchone() == ("PENDING",)
    conn.close()
    assert [c.kind for c in run.checkpoints] == ["start", *["step"] * 5]
    async with launched(app.dbos):
        assert await (await app.dbos.retrieve_workflow("wf")).get_result() == 15
    assert app.runs == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1})


async def test_nothing_is_written_after_the_crash_by_any_workflow(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    dbos = DBOS(config_for(path))
    ticks = Counter[str]()

    @dbos.step()
    async def tick(name: str) -> None:
        ticks[name] += 1
        await trio.sleep(0.001)

    @dbos.workflow()
    async def busy(name: str, steps: int) -> None:
        for _ in range(steps):
            await tick(name)

    async with run_until_crash(dbos, CrashPoint.after_step("target", 10)) as run:
        with SetWorkflowID("bystander"):
            await dbos.start_workflow(busy, "bystander", 10_000)
        with SetWorkflowID("target"):
            await dbos.start_workflow(busy, "target", 20)
        await run.wait()
    conn = sqlite3.connect(path)
    counts = dict(
        conn.execute("SELECT workflow_uuid, count(*) FROM operation_outputs GROUP BY 1").fetchall()
    )
    conn.close()
    assert counts["target"] == 10
    # Every bystander step whose body ran before the crash either recorded its checkpoint
    # before it, or was cut off: none recorded after.
    assert counts["bystander"] in (ticks["bystander"], ticks["bystander"] - 1)
    await trio.sleep(0.05)
    conn = sqlite3.connect(path)
    again = dict(
        conn.execute("SELECT workflow_uuid, count(*) FROM operation_outputs GROUP BY 1").fetchall()
    )
    conn.close()
    assert again == counts


async def test_a_crash_point_never_reached_is_reported(tmp_path: Path) -> None:
    app = five_steps(config_for(tmp_path / "db.sqlite"))
    with pytest.raises(CrashPointNotReached, match="checkpoint 7"):
        async with run_until_crash(app.dbos, CrashPoint.after_step("wf", 9)) as run:
            with SetWorkflowID("wf"):
                await app.dbos.start_workflow(app.workflow)
            await run.wait()


async def test_crash_injection_works_on_postgres_with_the_real_clock() -> None:
    try:
        server = admin_url()
    except Exception as error:  # no server, no Docker
        pytest.skip(f"no PostgreSQL: {error}")
    if not server.startswith("postgres"):
        pytest.skip("the test server is named by a conninfo string, not a URL")
    with temporary_postgres_url(server) as url:
        app = five_steps(Config(app_name=APP, database_url=url))
        async with run_until_crash(app.dbos, CrashPoint.after_step("wf", 2)) as run:
            with SetWorkflowID("wf"):
                await app.dbos.start_workflow(app.workflow)
            await run.wait()
        assert run.crash is not None
        async with launched(app.dbos):
            assert await (await app.dbos.retrieve_workflow("wf")).get_result() == 15
    assert app.runs == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 1})


# --- the pytest plugin ----------------------------------------------------------------------

PLUGIN_TEST = """
    import trio
    import pytest

    from dbos_trio import DBOS

    WORKFLOWS = {}


    @pytest.fixture
    def dbos_app(dbos_config):
        dbos = DBOS(dbos_config)

        @dbos.workflow()
        async def nap() -> str:
            await dbos.sleep(3 * 86400)
            return "rested"

        WORKFLOWS["nap"] = nap
        return dbos


    async def test_three_virtual_days(launched_dbos, autojump_clock):
        began = trio.current_time()
        handle = await launched_dbos.start_workflow(WORKFLOWS["nap"])
        assert await handle.get_result() == "rested"
        assert trio.current_time() - began >= 3 * 86400


    async def test_the_database_is_a_fresh_sqlite_file(dbos_database_url, launched_dbos):
        assert dbos_database_url.startswith("sqlite:///")
        assert await launched_dbos.list_workflows() == []
"""


def test_the_pytest_plugin_gives_a_launched_dbos_on_virtual_time(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["dbos_trio.testing.pytest_plugin"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n")
    (tmp_path / "test_app.py").write_text(textwrap.dedent(PLUGIN_TEST))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
