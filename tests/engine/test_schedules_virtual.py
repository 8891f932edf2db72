"""The scheduler under virtual time (SQLite, the testing kit, pytest-trio's autojump clock).

The engine's clock (``dbos_trio._clock.Clock``) is anchored to the wall clock at each
launch; to put the virtual epoch on a chosen day (a DST transition) and keep it running
across relaunches (downtime), the ``wall`` fixture makes the wall clock the clock reads be
``start + trio.current_time()`` — the real clock stays the real one for everything else.
Workflow bodies record what they were called with in the test's memory.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
import types
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import trio
import trio.testing

import dbos_trio._clock
from dbos_trio import DBOS, Client, Config, DBOSInvalidArgumentError, PickleSerializer
from dbos_trio._core import cron
from dbos_trio._engine.schedules.firing import MAX_BACKFILL_TICKS
from dbos_trio._engine.schedules.scheduler import MAX_CATCH_UP_TICKS
from dbos_trio.testing import launched, sqlite_url

APP = "sched-virtual"
NEW_YORK = ZoneInfo("America/New_York")


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> Callable[[datetime], None]:
    """``wall(moment)``: from now on the engine's wall clock reads ``moment`` plus the
    virtual time elapsed since (call it inside the test's Trio run)."""

    def start_at(moment: datetime) -> None:
        base = moment.timestamp() - trio.current_time()
        fake = types.SimpleNamespace(
            time=lambda: base + trio.current_time(), monotonic=time.monotonic
        )
        monkeypatch.setattr(dbos_trio._clock, "time", fake)

    return start_at


@pytest.fixture
def url(tmp_path: Path) -> str:
    return sqlite_url(tmp_path / "system.sqlite")


class App:
    """A DBOS with a scheduled workflow ``tick`` that records each call."""

    def __init__(self, url: str, **config: Any) -> None:
        self.dbos = DBOS(Config(app_name=APP, database_url=url, app_version="v1", **config))
        self.calls: list[tuple[str, datetime, Any]] = []
        dbos = self.dbos

        @dbos.workflow(name="tick")
        async def tick(scheduled_time: datetime, context: Any) -> str:
            workflow_id = dbos.workflow_id
            assert workflow_id is not None
            self.calls.append((workflow_id, scheduled_time, context))
            return scheduled_time.isoformat()

        self.tick = tick

    def ids(self) -> list[str]:
        return [call[0] for call in self.calls]


def rows_of(url: str, schedule_name: str) -> list[tuple[str, str, str, str | None]]:
    """(id, status, inputs, queue) of every run of the schedule, read past the library."""
    conn = sqlite3.connect(url[len("sqlite:///") :])
    try:
        return conn.execute(
            "SELECT ws.workflow_uuid, ws.status, wi.inputs, ws.queue_name FROM workflow_status ws "
            "JOIN workflow_input wi ON wi.workflow_uuid = ws.workflow_uuid "
            "WHERE ws.schedule_name = ? ORDER BY ws.workflow_uuid",
            (schedule_name,),
        ).fetchall()
    finally:
        conn.close()


def expected_ids(name: str, expression: str, start: datetime, end: datetime, tz: Any) -> list[str]:
    ticks = cron.ticks_between(expression, start, end, tz)
    return [cron.firing_id(name, t) for t in ticks]


# Virtual seconds of the one-second schedule: a quarter day in the suite (the same
# mechanism, a quarter of the rows); DBOS_TRIO_SCHEDULE_SPAN=86400 is the full virtual day.
SPAN = int(os.environ.get("DBOS_TRIO_SCHEDULE_SPAN", "21600"))


async def test_a_one_second_schedule_fires_every_tick_of_a_virtual_span(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    # Only firing is measured: the runs wait on a queue this executor does not serve
    # (running them is the next test's subject, over an hour).
    wall(datetime(2026, 6, 1, tzinfo=UTC))
    app = App(url, listen_queues=[])
    app.dbos.register_queue("ticks")
    async with launched(app.dbos):
        real_start = time.perf_counter()
        await app.dbos.create_schedule(
            schedule_name="every-second",
            workflow=app.tick,
            schedule="* * * * * *",
            context={"n": 1},
            queue_name="ticks",
        )
        await trio.sleep(SPAN + 0.5)
        real = time.perf_counter() - real_start
        stored = await app.dbos.get_schedule("every-second")
    print(f"\n{SPAN:,} virtual seconds of a 1-second schedule: {real:.1f} s of real time")
    rows = rows_of(url, "every-second")
    start = datetime(2026, 6, 1, tzinfo=UTC)
    assert [row[0] for row in rows] == expected_ids(
        "every-second", "* * * * * *", start, start + timedelta(seconds=SPAN + 1), UTC
    )
    assert len(rows) == SPAN
    assert {row[1] for row in rows} == {"ENQUEUED"} and {row[3] for row in rows} == {"ticks"}
    pickle = PickleSerializer()
    for workflow_id, _, inputs, _ in rows[::997]:
        decoded = pickle.deserialize(inputs)
        assert decoded == {
            "args": (datetime.fromisoformat(workflow_id[19:]), {"n": 1}),
            "kwargs": {},
        }
    last_tick = start + timedelta(seconds=SPAN)
    assert stored is not None and stored.last_fired_at == last_tick.isoformat()


async def test_each_tick_runs_once_with_its_scheduled_time_and_context(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    wall(datetime(2026, 6, 1, 12, tzinfo=UTC))
    app = App(url)
    async with launched(app.dbos):
        await app.dbos.create_schedule(
            schedule_name="half-hour", workflow=app.tick, schedule="* * * * * *", context="ctx"
        )
        await trio.sleep(1800.5)
        await app.dbos.pause_schedule("half-hour")  # takes effect at once: changed here
        await trio.sleep(5)
        listed = await app.dbos.list_workflows(schedule_name="half-hour", load_input=False)
    start = datetime(2026, 6, 1, 12, tzinfo=UTC)
    expected = expected_ids("half-hour", "* * * * * *", start, start + timedelta(seconds=1801), UTC)
    assert sorted(app.ids()) == expected  # each tick ran, once
    assert all(cron.firing_id("half-hour", t) == i and c == "ctx" for i, t, c in app.calls)
    assert {w.status for w in listed} == {"SUCCESS"} and len(listed) == 1800
    assert {w.schedule_name for w in listed} == {"half-hour"}
    assert {w.app_version for w in listed} == {"v1"}


async def test_two_executors_firing_one_schedule_make_one_workflow_per_tick(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    wall(datetime(2026, 6, 1, tzinfo=UTC))
    a = App(url, executor_id="a", scheduler_polling_interval_sec=1)
    b = App(url, executor_id="b", scheduler_polling_interval_sec=1)
    async with launched(a.dbos), launched(b.dbos):
        await a.dbos.create_schedule(
            schedule_name="shared", workflow=a.tick, schedule="* * * * * *"
        )
        await trio.sleep(600.5)
        await a.dbos.pause_schedule("shared")
        await trio.sleep(5)
    everything = a.ids() + b.ids()
    assert len(everything) == len(set(everything))  # no tick ran twice
    start = datetime(2026, 6, 1, tzinfo=UTC)
    assert set(
        expected_ids("shared", "* * * * * *", start, start + timedelta(seconds=601), UTC)
    ) <= set(everything)
    assert a.calls and b.calls  # both fired and ran some


async def test_pause_resume_and_delete_by_another_process_take_effect_within_one_interval(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    interval = 10.0
    start = datetime(2026, 6, 1, tzinfo=UTC)
    wall(start)
    app = App(url, scheduler_polling_interval_sec=interval)
    t0 = trio.current_time()
    async with launched(app.dbos), Client(url, app_name=APP) as other:
        await other.create_schedule(
            schedule_name="remote", workflow_name="tick", schedule="* * * * * *"
        )
        await trio.sleep(100)  # past the first minute's fast polling
        await other.pause_schedule("remote")
        paused = trio.current_time() - t0
        await trio.sleep(100)
        await other.resume_schedule("remote")
        resumed = trio.current_time() - t0
        await trio.sleep(100)
        await other.delete_schedule("remote")
        deleted = trio.current_time() - t0
        await trio.sleep(100)
    fired = sorted(
        (datetime.fromisoformat(i[len("sched-remote-") :]) - start).total_seconds()
        for i in app.ids()
    )
    # Created at 0 and seen within a second (the first minute polls every second)...
    assert fired[0] <= 2
    # ... every tick before the pause (the one at the instant of it may or may not fire),
    # none from one interval after it,
    assert [s for s in fired if s < int(paused)] == [
        float(s) for s in range(int(fired[0]), int(paused))
    ]
    assert not [s for s in fired if paused + interval + 1 < s <= resumed]
    # every tick from one interval after the resume until the delete, none after that.
    back = [s for s in fired if resumed < s <= deleted]
    assert back and back[0] <= resumed + interval + 1
    assert [s for s in back if s < int(deleted)] == [
        float(s) for s in range(int(back[0]), int(deleted))
    ]
    assert not [s for s in fired if s > deleted + interval + 1]


async def test_a_week_is_backfilled_once_whatever_the_number_of_backfills(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    now = datetime(2026, 6, 8, 0, 30, tzinfo=UTC)
    wall(now)
    app = App(url)
    async with launched(app.dbos):
        await app.dbos.create_schedule(
            schedule_name="hourly",
            workflow=app.tick,
            schedule="0 * * * *",
            cron_timezone="Europe/Paris",
        )
        await app.dbos.pause_schedule("hourly")  # only the backfill fires
        week_ago = now - timedelta(days=7)
        handles = await app.dbos.backfill_schedule("hourly", week_ago, now)
        results = [await h.get_result() for h in handles]
        again = await app.dbos.backfill_schedule("hourly", week_ago.replace(tzinfo=None), now)
        await trio.sleep(5)
    paris = ZoneInfo("Europe/Paris")
    expected = expected_ids("hourly", "0 * * * *", week_ago, now, paris)
    assert len(expected) == 168
    assert [h.workflow_id for h in handles] == expected == [h.workflow_id for h in again]
    assert results == [i[len("sched-hourly-") :] for i in expected]
    assert sorted(app.ids()) == sorted(expected)  # the second backfill ran nothing again
    assert len(rows_of(url, "hourly")) == 168


async def test_missed_ticks_are_skipped_unless_the_schedule_backfills_automatically(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    start = datetime(2026, 6, 1, tzinfo=UTC)
    wall(start)
    app = App(url)
    async with launched(app.dbos):
        for name, backfills in (("skips", False), ("catches-up", True)):
            await app.dbos.create_schedule(
                schedule_name=name,
                workflow=app.tick,
                schedule="*/10 * * * *",
                automatic_backfill=backfills,
            )
        await trio.sleep(3600 + 15)  # up to 01:00 (a firing's jitter is at most 10 s)
    await trio.sleep(3600)  # no executor runs from 01:00:15 to 02:00:15
    async with launched(app.dbos):
        await trio.sleep(1800)  # until 02:30:15

    def fired(name: str) -> list[str]:
        return sorted(i for i in app.ids() if i.startswith(f"sched-{name}-"))

    def ticks(name: str, since: float, until: float) -> list[str]:
        return expected_ids(
            name,
            "*/10 * * * *",
            start + timedelta(seconds=since),
            start + timedelta(seconds=until),
            UTC,
        )

    # Caught up at the relaunch: 01:10 ... 02:00 were fired then, from last_fired_at.
    assert fired("catches-up") == ticks("catches-up", 0, 9015)
    assert len(fired("catches-up")) == 15
    # Skipped: nothing between 01:00 and the relaunch.
    assert fired("skips") == ticks("skips", 0, 3615) + ticks("skips", 7215, 9015)
    assert len(fired("skips")) == 9


async def test_a_trigger_runs_now_with_the_trigger_id(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    wall(datetime(2026, 6, 1, 8, tzinfo=UTC))
    app = App(url)
    async with launched(app.dbos):
        await app.dbos.create_schedule(
            schedule_name="manual", workflow=app.tick, schedule="0 0 1 1 *", context=7
        )
        await trio.sleep(2.25)
        handle = await app.dbos.trigger_schedule("manual")
        result = await handle.get_result()
    [(workflow_id, scheduled_time, context)] = app.calls
    assert workflow_id == handle.workflow_id == f"sched-manual-trigger-{scheduled_time.isoformat()}"
    assert scheduled_time.tzinfo is UTC and context == 7 and result == scheduled_time.isoformat()
    assert scheduled_time - datetime(2026, 6, 1, 8, tzinfo=UTC) >= timedelta(seconds=2.25)


async def test_a_schedule_fires_in_its_time_zone(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    start = datetime(2026, 6, 1, tzinfo=UTC)
    wall(start)
    app = App(url)
    async with launched(app.dbos):
        await app.dbos.create_schedule(
            schedule_name="tokyo-nine",
            workflow=app.tick,
            schedule="0 9 * * *",
            cron_timezone="Asia/Tokyo",
        )
        await trio.sleep(3 * 86_400 + 15)
    assert sorted(app.ids()) == [
        "sched-tokyo-nine-2026-06-02T09:00:00+09:00",
        "sched-tokyo-nine-2026-06-03T09:00:00+09:00",
        "sched-tokyo-nine-2026-06-04T09:00:00+09:00",
    ]
    assert {t.astimezone(UTC).hour for _, t, _ in app.calls} == {0}


@pytest.mark.parametrize(
    ("day", "hourly_count", "nightly"),
    [
        pytest.param(
            datetime(2026, 3, 8, tzinfo=NEW_YORK),
            23,
            ["2026-03-08T03:00:00-04:00"],
            id="spring-forward",
        ),
        pytest.param(
            datetime(2026, 11, 1, tzinfo=NEW_YORK),
            25,
            ["2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00"],
            id="fall-back",
        ),
    ],
)
async def test_a_dst_day_fires_as_croniter_defines_it(
    autojump_clock: trio.testing.MockClock,
    url: str,
    wall: Callable[[datetime], None],
    day: datetime,
    hourly_count: int,
    nightly: list[str],
) -> None:
    start = day - timedelta(minutes=5)
    wall(start)
    app = App(url)
    skipped_or_repeated = "30 2 * * *" if hourly_count == 23 else "30 1 * * *"
    async with launched(app.dbos):
        for name, expression in (("ny-hourly", "0 * * * *"), ("ny-nightly", skipped_or_repeated)):
            await app.dbos.create_schedule(
                schedule_name=name,
                workflow=app.tick,
                schedule=expression,
                cron_timezone="America/New_York",
            )
        await trio.sleep(86_400 + 600)
    end = day + timedelta(days=1)
    hourly = sorted(
        i
        for i in app.ids()
        if i.startswith("sched-ny-hourly-") and i < f"sched-ny-hourly-{end.date()}"
    )
    assert len(hourly) == hourly_count
    assert hourly == expected_ids(
        "ny-hourly", "0 * * * *", start, end - timedelta(seconds=1), NEW_YORK
    )
    assert sorted(i for i in app.ids() if i.startswith("sched-ny-nightly-")) == [
        f"sched-ny-nightly-{t}" for t in nightly
    ]


# --- one hostile schedule row never freezes the executor: catch-up and backfill are bounded
# (a per-second cron, automatic_backfill, last_fired_at in 1970: fifty-six years of missed
# ticks, which a catch-up computing every tick never finished)


def _runs(url: str, schedule_name: str) -> int:
    conn = sqlite3.connect(url[len("sqlite:///") :])
    try:
        row = conn.execute(
            "SELECT count(*) FROM workflow_status WHERE schedule_name = ?", (schedule_name,)
        ).fetchone()
        return int(row[0])
    finally:
        conn.close()


def _make_hostile(url: str, schedule_name: str) -> None:
    conn = sqlite3.connect(url[len("sqlite:///") :])
    try:
        conn.execute(
            "UPDATE workflow_schedules SET status = 'ACTIVE', automatic_backfill = 1, "
            "last_fired_at = '1970-01-01T00:00:00+00:00' WHERE schedule_name = ?",
            (schedule_name,),
        )
        conn.commit()
    finally:
        conn.close()


async def test_a_schedule_last_fired_in_1970_catches_up_its_latest_ticks_only(
    autojump_clock: trio.testing.MockClock,
    url: str,
    wall: Callable[[datetime], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="dbos_trio")
    start = datetime(2026, 6, 1, tzinfo=UTC)
    wall(start)
    app = App(url)
    async with launched(app.dbos):
        await app.dbos.create_schedule(
            schedule_name="hostile", workflow=app.tick, schedule="* * * * * *"
        )
        await app.dbos.pause_schedule("hostile")
        await app.dbos.create_schedule(
            schedule_name="healthy", workflow=app.tick, schedule="* * * * *"
        )
    _make_hostile(url, "hostile")
    healthy_before = _runs(url, "healthy")
    async with launched(app.dbos):
        await trio.sleep(5 * 60 + 15)  # five minutes and a firing's jitter
        await app.dbos.pause_schedule("hostile")
    assert _runs(url, "healthy") - healthy_before == 5
    caught_up_and_fired = _runs(url, "hostile")
    # The latest MAX_CATCH_UP_TICKS missed ticks, then about one a second while it ran.
    assert MAX_CATCH_UP_TICKS < caught_up_and_fired <= MAX_CATCH_UP_TICKS + 5 * 60 + 20
    warned = [r.getMessage() for r in caplog.records if "missed more than" in r.getMessage()]
    assert warned and "'hostile'" in warned[0] and str(MAX_CATCH_UP_TICKS) in warned[0]


async def test_a_backfill_of_too_many_ticks_is_refused_before_anything_is_written(
    autojump_clock: trio.testing.MockClock, url: str, wall: Callable[[datetime], None]
) -> None:
    now = datetime(2026, 6, 8, tzinfo=UTC)
    wall(now)
    app = App(url)
    async with launched(app.dbos):
        await app.dbos.create_schedule(
            schedule_name="every-second", workflow=app.tick, schedule="* * * * * *"
        )
        await app.dbos.pause_schedule("every-second")
        with pytest.raises(DBOSInvalidArgumentError) as refused:
            await app.dbos.backfill_schedule("every-second", now - timedelta(days=3), now)
        # Within the bound, the same call fires every tick.
        handles = await app.dbos.backfill_schedule(
            "every-second", now - timedelta(seconds=30), now
        )
    message = str(refused.value)
    assert "'every-second'" in message and f"{MAX_BACKFILL_TICKS:,}" in message
    assert "nothing was written" in message
    assert len(handles) == 29
    assert _runs(url, "every-second") == 29
