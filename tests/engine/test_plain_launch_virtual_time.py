"""A plain ``dbos.launched()`` under an autojumping MockClock paces its background work
the way ``dbos_trio.testing.launched`` does (engine/pacing.py).

What is observed is the mechanism: how many times the timeout sweep asked the database,
over a week and an hour of virtual time. Paced every second that is ~612 000 sweeps (the
101 s of real time issue 20 measured); paced every five virtual minutes, ~2 000.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from dbos_trio import DBOS, Config
from dbos_trio.testing import VIRTUAL_BACKGROUND_INTERVAL, launched, sqlite_url

from support.sweeps import count_timeout_sweeps, most_ticks

HOUR, DAY = 3600.0, 86400.0
SPAN = 7 * DAY + HOUR


def week_then_hour_app(path: Path) -> tuple[DBOS, Callable[[], Awaitable[object]]]:
    """The issue's workflow: sleeps 7 days, then waits an hour in recv for nothing."""
    dbos = DBOS(Config(app_name="plain-virtual", database_url=sqlite_url(path)))

    @dbos.workflow()
    async def patient() -> object:
        await dbos.sleep(7 * DAY)
        return await dbos.recv("never", timeout_seconds=HOUR)

    return dbos, patient


async def run_week_then_hour(
    dbos: DBOS, patient: Callable[[], Awaitable[object]]
) -> tuple[float, float | None]:
    """Run the workflow in a plain launch: (virtual seconds it took, the launch's pacing)."""
    async with dbos.launched():
        pacing = dbos._require_executor("test").background_interval
        began = trio.current_time()
        handle = await dbos.start_workflow(patient)
        assert await handle.get_result() is None
        return trio.current_time() - began, pacing


async def test_a_plain_launch_on_the_autojump_clock_sweeps_every_five_virtual_minutes(
    autojump_clock: trio.testing.MockClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = count_timeout_sweeps(monkeypatch)
    elapsed, pacing = await run_week_then_hour(*week_then_hour_app(tmp_path / "db.sqlite"))
    assert pacing == VIRTUAL_BACKGROUND_INTERVAL
    assert SPAN <= elapsed < SPAN + 1
    assert 1 <= ticks[0] <= most_ticks(elapsed)


def test_trio_run_with_an_autojump_clock_paces_a_plain_launch_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reproduction, outside pytest-trio: trio.run(main, clock=MockClock(0)).
    ticks = count_timeout_sweeps(monkeypatch)
    dbos, patient = week_then_hour_app(tmp_path / "db.sqlite")
    clock = trio.testing.MockClock(autojump_threshold=0)
    elapsed, pacing = trio.run(run_week_then_hour, dbos, patient, clock=clock)
    assert pacing == VIRTUAL_BACKGROUND_INTERVAL
    assert SPAN <= elapsed < SPAN + 1
    assert 1 <= ticks[0] <= most_ticks(elapsed)


async def test_the_real_clock_keeps_the_engines_own_one_second_pacing(tmp_path: Path) -> None:
    dbos = DBOS(Config(app_name="plain-real", database_url=sqlite_url(tmp_path / "db.sqlite")))
    async with dbos.launched():
        assert dbos._require_executor("test").background_interval is None


def test_a_non_autojumping_mock_clock_keeps_the_engines_own_pacing(tmp_path: Path) -> None:
    dbos = DBOS(Config(app_name="plain-fast", database_url=sqlite_url(tmp_path / "db.sqlite")))

    async def main() -> float | None:
        async with dbos.launched():
            return dbos._require_executor("test").background_interval

    assert trio.run(main, clock=trio.testing.MockClock(rate=10)) is None


async def test_the_kits_explicit_pacing_still_wins_over_the_default(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    dbos = DBOS(Config(app_name="kit-pacing", database_url=sqlite_url(tmp_path / "db.sqlite")))
    async with launched(dbos, background_interval=None):
        assert dbos._require_executor("test").background_interval is None
    async with launched(dbos, background_interval=60.0):
        assert dbos._require_executor("test").background_interval == 60.0
