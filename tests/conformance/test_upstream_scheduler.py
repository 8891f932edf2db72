"""Port of the official SDK's ``tests/test_scheduler.py``: schedules created, listed,
applied, fired, paused, backfilled and triggered at run time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
import trio
from trio.testing import MockClock

from dbos_trio import DBOS, DBOSException, ScheduleInput


async def test_schedule_crud(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_schedule_crud"""

    @dbos.workflow()
    async def my_workflow(scheduled_at: datetime, ctx: Any) -> None:
        return None

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="test-schedule",
            workflow_fn=my_workflow,
            schedule="* * * * *",
            context={"env": "test"},
            cron_timezone="America/New_York",
        )
        [listed] = await dbos.list_schedules()
        assert listed.schedule_name == "test-schedule"
        assert listed.workflow_name == my_workflow.__qualname__
        assert listed.schedule == "* * * * *"
        assert listed.context == {"env": "test"}
        assert listed.workflow_class_name is None
        assert listed.cron_timezone == "America/New_York"
        got = await dbos.get_schedule("test-schedule")
        assert got is not None and got.schedule_id == listed.schedule_id
        assert await dbos.get_schedule("nonexistent") is None
        with pytest.raises(DBOSException, match="Invalid cron schedule"):
            await dbos.create_schedule(
                schedule_name="bad", workflow_fn=my_workflow, schedule="not a cron"
            )
        with pytest.raises(DBOSException, match="already exists"):
            await dbos.create_schedule(
                schedule_name="test-schedule", workflow_fn=my_workflow, schedule="0 0 * * *"
            )
        with pytest.raises(DBOSException, match="Invalid timezone"):
            await dbos.create_schedule(
                schedule_name="bad-tz",
                workflow_fn=my_workflow,
                schedule="* * * * *",
                cron_timezone="Not/AZone",
            )
        await dbos.delete_schedule("test-schedule")
        assert await dbos.list_schedules() == []
        assert await dbos.list_schedules(status="NONEXISTENT") == []


async def test_apply_schedules(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_apply_schedules"""

    @dbos.workflow()
    async def wf_a(scheduled_at: datetime, ctx: Any) -> None:
        return None

    @dbos.workflow()
    async def wf_b(scheduled_at: datetime, ctx: Any) -> None:
        return None

    async with dbos.launched():
        await dbos.apply_schedules(
            [
                ScheduleInput(
                    schedule_name="sched-a", workflow=wf_a, schedule="* * * * *", context={"r": 1}
                ),
                ScheduleInput(
                    schedule_name="sched-b",
                    workflow=wf_b,
                    schedule="0 0 * * *",
                    automatic_backfill=True,
                    cron_timezone="Europe/London",
                ),
            ]
        )
        by_name = {s.schedule_name: s for s in await dbos.list_schedules()}
        assert by_name["sched-a"].context == {"r": 1}
        assert by_name["sched-a"].automatic_backfill is False
        assert by_name["sched-a"].cron_timezone is None
        assert by_name["sched-b"].automatic_backfill is True
        assert by_name["sched-b"].cron_timezone == "Europe/London"
        await dbos.apply_schedules(
            [
                ScheduleInput(schedule_name="sched-a", workflow=wf_a, schedule="0 * * * *"),
                ScheduleInput(
                    schedule_name="sched-c", workflow=wf_b, schedule="*/5 * * * *", context=[1]
                ),
            ]
        )
        by_name = {s.schedule_name: s for s in await dbos.list_schedules()}
        assert sorted(by_name) == ["sched-a", "sched-b", "sched-c"]
        assert by_name["sched-a"].schedule == "0 * * * *"
        assert by_name["sched-c"].context == [1]


async def test_dynamic_scheduler_fires(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_dynamic_scheduler_fires (and _delete_stops_firing)"""
    received: list[Any] = []
    enough = trio.Event()

    @dbos.workflow()
    async def every_second(scheduled_at: datetime, ctx: Any) -> None:
        received.append(ctx)
        if len(received) >= 2:
            enough.set()

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="every-second",
            workflow_fn=every_second,
            schedule="* * * * * *",
            context={"id": "a"},
        )
        await enough.wait()
        assert all(ctx == {"id": "a"} for ctx in received)
        fired = await dbos.get_schedule("every-second")
        assert fired is not None and fired.last_fired_at is not None
        await dbos.delete_schedule("every-second")
        await trio.sleep(5)
        count = len(received)
        await trio.sleep(5)
        assert len(received) == count


async def test_backfill_schedule(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_backfill_schedule"""
    received: list[tuple[datetime, Any]] = []

    @dbos.workflow()
    async def hourly(scheduled_at: datetime, ctx: Any) -> None:
        received.append((scheduled_at, ctx))

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="backfill-test",
            workflow_fn=hourly,
            schedule="0 * * * *",
            context={"env": "backfill"},
        )
        start = datetime(2025, 1, 1, 0, 30, tzinfo=UTC)
        end = start + timedelta(hours=3)
        handles = await dbos.backfill_schedule("backfill-test", start, end)
        assert len(handles) == 3
        for handle in handles:
            await handle.get_result()
        in_window = sorted(t for t, _ in received if start <= t < end)
        assert in_window == [datetime(2025, 1, 1, h, tzinfo=UTC) for h in (1, 2, 3)]
        assert all(ctx == {"env": "backfill"} for _, ctx in received)
        again = await dbos.backfill_schedule("backfill-test", start, end)
        assert [h.workflow_id for h in again] == [h.workflow_id for h in handles]
        with pytest.raises(DBOSException, match="does not exist"):
            await dbos.backfill_schedule("no-such-schedule", start, end)


async def test_trigger_schedule(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_trigger_schedule"""
    received: list[tuple[datetime, Any]] = []

    @dbos.workflow()
    async def triggered(scheduled_at: datetime, ctx: Any) -> None:
        received.append((scheduled_at, ctx))

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="trigger-test",
            workflow_fn=triggered,
            schedule="0 0 1 1 *",
            context=[1, 2, 3],
        )
        handle = await dbos.trigger_schedule("trigger-test")
        assert handle.workflow_id.startswith("sched-trigger-test-trigger-")
        await handle.get_result()
        assert [ctx for _, ctx in received] == [[1, 2, 3]]
        with pytest.raises(DBOSException, match="does not exist"):
            await dbos.trigger_schedule("no-such-schedule")


async def test_pause_resume_schedule(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_pause_resume_schedule"""
    fired = {"n": 0}
    first = trio.Event()

    @dbos.workflow()
    async def every_second(scheduled_at: datetime, ctx: Any) -> None:
        fired["n"] += 1
        first.set()

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="pause-test", workflow_fn=every_second, schedule="* * * * * *"
        )
        await first.wait()
        await dbos.pause_schedule("pause-test")
        paused = await dbos.get_schedule("pause-test")
        assert paused is not None and paused.status == "PAUSED"
        await trio.sleep(3)
        count = fired["n"]
        await trio.sleep(3)
        assert fired["n"] == count
        await dbos.resume_schedule("pause-test")
        resumed = await dbos.get_schedule("pause-test")
        assert resumed is not None and resumed.status == "ACTIVE"
        await trio.sleep(5)
        assert fired["n"] > count


async def test_list_workflows_by_schedule_name(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_list_workflows_by_schedule_name"""

    @dbos.workflow()
    async def triggered(scheduled_at: datetime, ctx: Any) -> None:
        return None

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="named", workflow_fn=triggered, schedule="0 0 1 1 *"
        )
        handle = await dbos.trigger_schedule("named")
        await handle.get_result()
        listed = await dbos.list_workflows(schedule_name="named")
        assert [w.workflow_id for w in listed] == [handle.workflow_id]
        assert await dbos.list_workflows(schedule_name="other") == []


async def test_schedule_with_queue_name(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_schedule_with_queue_name"""
    dbos.register_queue("sched-queue")

    @dbos.workflow()
    async def triggered(scheduled_at: datetime, ctx: Any) -> None:
        return None

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="queued",
            workflow_fn=triggered,
            schedule="0 0 1 1 *",
            queue_name="sched-queue",
        )
        handle = await dbos.trigger_schedule("queued")
        await handle.get_result()
        assert (await handle.get_status()).queue_name == "sched-queue"


async def test_client_schedule_crud(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_client_schedule_crud (and client trigger/pause)"""
    from dbos_trio import Client

    received: list[Any] = []

    @dbos.workflow(name="client_target")
    async def target(scheduled_at: datetime, ctx: Any) -> None:
        received.append(ctx)

    async with dbos.launched(), Client(dbos_url) as client:
        await client.create_schedule(
            schedule_name="from-client",
            workflow_name="client_target",
            schedule="0 0 1 1 *",
            context={"by": "client"},
        )
        [listed] = await client.list_schedules()
        assert (listed.schedule_name, listed.workflow_name) == ("from-client", "client_target")
        assert listed.context == {"by": "client"}
        got = await client.get_schedule("from-client")
        assert got is not None and got.schedule_id == listed.schedule_id
        handle = await client.trigger_schedule("from-client")
        await handle.get_result()
        assert received == [{"by": "client"}]
        await client.pause_schedule("from-client")
        paused = await client.get_schedule("from-client")
        assert paused is not None and paused.status == "PAUSED"
        await client.resume_schedule("from-client")
        await client.delete_schedule("from-client")
        assert await client.list_schedules() == []


async def test_client_backfill_schedule(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_scheduler.py::test_client_backfill_schedule"""
    from dbos_trio import Client

    received: list[datetime] = []

    @dbos.workflow(name="hourly")
    async def hourly(scheduled_at: datetime, ctx: Any) -> None:
        received.append(scheduled_at)

    async with dbos.launched(), Client(dbos_url) as client:
        await client.create_schedule(
            schedule_name="hourly", workflow_name="hourly", schedule="0 * * * *"
        )
        start = datetime(2025, 1, 1, 0, 30, tzinfo=UTC)
        handles = await client.backfill_schedule("hourly", start, start + timedelta(hours=2))
        assert len(handles) == 2
        for handle in handles:
            await handle.get_result()
        # The schedule is live too: virtual time may cross an hour while the
        # backfilled runs are awaited, and that tick fires as well (it is now's).
        in_window = sorted(t for t in received if t < start + timedelta(hours=2))
        assert in_window == [datetime(2025, 1, 1, h, tzinfo=UTC) for h in (1, 2)]


async def test_schedule_crud_from_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_schedule_crud_from_workflow"""

    @dbos.workflow()
    async def target(scheduled_at: datetime, ctx: Any) -> None:
        return None

    @dbos.workflow()
    async def manage() -> int:
        await dbos.create_schedule(schedule_name="in-wf", workflow_fn=target, schedule="0 0 1 1 *")
        count = len(await dbos.list_schedules())
        await dbos.delete_schedule("in-wf")
        return count

    async with dbos.launched():
        assert await manage() == 1
        assert await dbos.list_schedules() == []


async def test_backfill_with_timezone(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_backfill_with_timezone"""
    from zoneinfo import ZoneInfo

    received: list[datetime] = []

    @dbos.workflow()
    async def daily(scheduled_at: datetime, ctx: Any) -> None:
        received.append(scheduled_at)

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="ny-midnight",
            workflow_fn=daily,
            schedule="0 0 * * *",
            cron_timezone="America/New_York",
        )
        start = datetime(2025, 1, 1, 12, tzinfo=UTC)
        handles = await dbos.backfill_schedule("ny-midnight", start, start + timedelta(days=2))
        for handle in handles:
            await handle.get_result()
        new_york = ZoneInfo("America/New_York")
        assert [t.astimezone(new_york).hour for t in sorted(received)] == [0, 0]
        assert sorted(received)[0] == datetime(2025, 1, 2, 5, tzinfo=UTC)


async def test_dynamic_scheduler_delete_stops_firing(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_dynamic_scheduler_delete_stops_firing"""
    fired = {"n": 0}
    first = trio.Event()

    @dbos.workflow()
    async def every_second(scheduled_at: datetime, ctx: Any) -> None:
        fired["n"] += 1
        first.set()

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="doomed", workflow_fn=every_second, schedule="* * * * * *"
        )
        await first.wait()
        await dbos.delete_schedule("doomed")
        await trio.sleep(3)
        count = fired["n"]
        await trio.sleep(5)
        assert fired["n"] == count


async def test_client_trigger_schedule(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_scheduler.py::test_client_trigger_schedule"""
    from dbos_trio import Client

    received: list[Any] = []

    @dbos.workflow(name="triggered")
    async def triggered(scheduled_at: datetime, ctx: Any) -> None:
        received.append(ctx)

    async with dbos.launched(), Client(dbos_url) as client:
        await client.create_schedule(
            schedule_name="t", workflow_name="triggered", schedule="0 0 1 1 *", context=[1, 2]
        )
        handle = await client.trigger_schedule("t")
        assert handle.workflow_id.startswith("sched-t-trigger-")
        await handle.get_result()
        assert received == [[1, 2]]
        with pytest.raises(DBOSException, match="does not exist"):
            await client.trigger_schedule("no-such-schedule")


async def test_client_pause_resume_schedule(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_scheduler.py::test_client_pause_resume_schedule"""
    from dbos_trio import Client

    fired = {"n": 0}

    @dbos.workflow(name="ticker")
    async def ticker(scheduled_at: datetime, ctx: Any) -> None:
        fired["n"] += 1

    async with dbos.launched(), Client(dbos_url) as client:
        await client.create_schedule(
            schedule_name="tick", workflow_name="ticker", schedule="* * * * * *"
        )
        await trio.sleep(3)
        await client.pause_schedule("tick")
        paused = await client.get_schedule("tick")
        assert paused is not None and paused.status == "PAUSED"
        await trio.sleep(3)
        count = fired["n"]
        await trio.sleep(3)
        assert fired["n"] == count
        await client.resume_schedule("tick")
        await trio.sleep(5)
        assert fired["n"] > count


async def test_classmethod_schedule(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_classmethod_schedule (and the static one)"""
    received: list[str] = []

    class Scheduled:
        @classmethod
        @dbos.workflow()
        async def by_class(cls, scheduled_at: datetime, ctx: Any) -> None:
            received.append(f"{cls.__name__}:{ctx}")

        @staticmethod
        @dbos.workflow()
        async def by_static(scheduled_at: datetime, ctx: Any) -> None:
            received.append(f"static:{ctx}")

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="cls", workflow_fn=Scheduled.by_class, schedule="0 0 1 1 *", context=1
        )
        await dbos.create_schedule(
            schedule_name="st", workflow_fn=Scheduled.by_static, schedule="0 0 1 1 *", context=2
        )
        cls_schedule = await dbos.get_schedule("cls")
        assert cls_schedule is not None and cls_schedule.workflow_class_name is not None
        await (await dbos.trigger_schedule("cls")).get_result()
        await (await dbos.trigger_schedule("st")).get_result()
        assert sorted(received) == ["Scheduled:1", "static:2"]


async def test_backfill_naive_datetime(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_backfill_naive_datetime (naive means UTC)"""
    received: list[datetime] = []

    @dbos.workflow()
    async def hourly(scheduled_at: datetime, ctx: Any) -> None:
        received.append(scheduled_at)

    async with dbos.launched():
        await dbos.create_schedule(schedule_name="naive", workflow_fn=hourly, schedule="0 * * * *")
        start = datetime(2025, 1, 1, 0, 30)
        handles = await dbos.backfill_schedule("naive", start, start + timedelta(hours=2))
        for handle in handles:
            await handle.get_result()
        # As in test_client_backfill_schedule: a live tick may fire meanwhile.
        in_window = sorted(t for t in received if t.year == 2025)
        assert in_window == [datetime(2025, 1, 1, h, tzinfo=UTC) for h in (1, 2)]


async def test_instance_method_schedule_rejected(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_instance_method_schedule_rejected"""
    from dbos_trio import DBOSConfiguredInstance

    class Configured(DBOSConfiguredInstance):
        def __init__(self) -> None:
            super().__init__("my-config")

        @dbos.workflow()
        async def scheduled(self, scheduled_at: datetime, ctx: Any) -> None:
            return None

    instance = Configured()
    async with dbos.launched():
        with pytest.raises(DBOSException, match="Configured instance methods cannot be used"):
            await dbos.create_schedule(
                schedule_name="instance-schedule",
                workflow_fn=instance.scheduled,
                schedule="* * * * *",
            )


@attrs.frozen
class StaleContext:
    """A schedule context class the application later removes (pickled by reference)."""

    region: str


def daily_cron_far_from_now() -> str:
    """A daily cron twelve hours from now: it cannot fire during a test."""
    return f"0 {(datetime.now(UTC).hour + 12) % 24} * * *"


async def fired(received: list[Any], count: int, *, matching: Any = ..., since: int = 0) -> None:
    """Wait (virtual time) until ``count`` runs since index ``since`` got ``matching``."""
    for _ in range(600):
        got = [c for c in received[since:] if matching is ... or c == matching]
        if len(got) >= count:
            return
        await trio.sleep(0.5)
    raise AssertionError(f"only {received[since:]!r} fired")


async def test_list_schedules_undeserializable_context(
    dbos: DBOS, autojump_clock: MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """upstream: tests/test_scheduler.py::test_list_schedules_undeserializable_context"""
    import sys

    from dbos_trio import PickleSerializer

    @dbos.workflow()
    async def my_workflow(scheduled_at: datetime, ctx: Any) -> None:
        return None

    async with dbos.launched():
        await dbos.apply_schedules(
            [
                ScheduleInput(
                    schedule_name="good-schedule",
                    workflow=my_workflow,
                    schedule="* * * * *",
                    context={"env": "test"},
                ),
                ScheduleInput(
                    schedule_name="bad-schedule",
                    workflow=my_workflow,
                    schedule="* * * * *",
                    context=StaleContext(region="us"),
                ),
            ]
        )
        expected_raw = PickleSerializer().serialize(StaleContext(region="us"))
        # The application's code changes: the class the context was pickled against is gone.
        monkeypatch.delattr(sys.modules[__name__], "StaleContext")
        by_name = {s.schedule_name: s for s in await dbos.list_schedules()}
        assert sorted(by_name) == ["bad-schedule", "good-schedule"]
        assert by_name["good-schedule"].context == {"env": "test"}
        assert by_name["bad-schedule"].context == expected_raw  # its stored string


async def test_apply_schedules_optional_context(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_apply_schedules_optional_context"""
    received: list[Any] = []

    @dbos.workflow()
    async def scheduled(scheduled_at: datetime, ctx: Any) -> None:
        received.append(ctx)

    async with dbos.launched():
        await dbos.apply_schedules(
            [ScheduleInput(schedule_name="no-context", workflow=scheduled, schedule="* * * * * *")]
        )
        [listed] = await dbos.list_schedules()
        assert listed.schedule_name == "no-context" and listed.context is None
        await fired(received, 1)
        assert all(ctx is None for ctx in received)
        await dbos.delete_schedule("no-context")
        assert await dbos.list_schedules() == []


async def test_apply_schedules_concurrent(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_apply_schedules_concurrent (tasks, not threads)"""

    @dbos.workflow()
    async def wf(scheduled_at: datetime, ctx: Any) -> None:
        return None

    def shared(schedule: str, region: str) -> list[ScheduleInput]:
        return [
            ScheduleInput(
                schedule_name="shared-schedule",
                workflow=wf,
                schedule=schedule,
                context={"region": region},
            )
        ]

    async with dbos.launched():
        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(dbos.apply_schedules, shared("* * * * *", "us"))
        [listed] = await dbos.list_schedules()
        assert (listed.schedule_name, listed.schedule) == ("shared-schedule", "* * * * *")
        assert listed.context == {"region": "us"}
        # Applied again: the one row is updated in place, its id kept.
        await dbos.apply_schedules(shared("0 * * * *", "eu"))
        [again] = await dbos.list_schedules()
        assert again.schedule_id == listed.schedule_id
        assert (again.schedule, again.context) == ("0 * * * *", {"region": "eu"})
        await dbos.delete_schedule("shared-schedule")
        assert await dbos.list_schedules() == []


async def test_apply_schedules_live_update(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_apply_schedules_live_update"""
    received: list[Any] = []

    @dbos.workflow()
    async def scheduled(scheduled_at: datetime, ctx: Any) -> None:
        received.append(ctx)

    def live(version: int) -> list[ScheduleInput]:
        return [
            ScheduleInput(
                schedule_name="live-update",
                workflow=scheduled,
                schedule="* * * * * *",
                context={"version": version},
            )
        ]

    async with dbos.launched():
        await dbos.apply_schedules(live(1))
        await fired(received, 1, matching={"version": 1})
        [before] = await dbos.list_schedules()
        count = len(received)
        await dbos.apply_schedules(live(2))
        # The running scheduler fires the new definition, under the same schedule id.
        await fired(received, 2, matching={"version": 2}, since=count)
        [after] = await dbos.list_schedules()
        assert after.schedule_id == before.schedule_id
        await dbos.delete_schedule("live-update")


async def test_apply_schedules_preserves_runtime_state(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_scheduler.py::test_apply_schedules_preserves_runtime_state

    ``last_fired_at`` is set in the row directly (upstream: a private ``_sys_db`` call)."""
    from support.backends import execute

    @dbos.workflow()
    async def wf(scheduled_at: datetime, ctx: Any) -> None:
        return None

    def keep(version: int) -> list[ScheduleInput]:
        return [
            ScheduleInput(
                schedule_name="state-keep",
                workflow=wf,
                schedule="0 0 * * *",
                context={"version": version},
            )
        ]

    async with dbos.launched():
        await dbos.apply_schedules(keep(1))
        await dbos.pause_schedule("state-keep")
        await execute(
            dbos_url,
            "UPDATE {t}workflow_schedules SET last_fired_at = %s WHERE schedule_name = %s",
            "2020-01-01T00:00:00+00:00",
            "state-keep",
        )
        await dbos.apply_schedules(keep(2))
        kept = await dbos.get_schedule("state-keep")
        assert kept is not None
        assert kept.status == "PAUSED"
        assert kept.last_fired_at == "2020-01-01T00:00:00+00:00"
        assert kept.context == {"version": 2}  # the definition is still updated
        await dbos.delete_schedule("state-keep")


async def test_dynamic_scheduler_add_after_launch(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_dynamic_scheduler_add_after_launch"""
    received: list[Any] = []

    @dbos.workflow()
    async def scheduled(scheduled_at: datetime, ctx: Any) -> None:
        received.append(ctx)

    async with dbos.launched():
        await trio.sleep(2)
        assert received == []
        await dbos.create_schedule(
            schedule_name="late-add", workflow_fn=scheduled, schedule="* * * * * *"
        )
        await fired(received, 2)
        await dbos.delete_schedule("late-add")


async def test_dynamic_scheduler_replace_schedule(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_dynamic_scheduler_replace_schedule"""
    received: list[Any] = []

    @dbos.workflow()
    async def scheduled(scheduled_at: datetime, ctx: Any) -> None:
        received.append(ctx)

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="replaceable",
            workflow_fn=scheduled,
            schedule=daily_cron_far_from_now(),
            context={"version": 1},
        )
        await trio.sleep(3)
        assert received == []
        await dbos.delete_schedule("replaceable")
        await dbos.create_schedule(
            schedule_name="replaceable-fast",
            workflow_fn=scheduled,
            schedule="* * * * * *",
            context={"version": 2},
        )
        await fired(received, 2)
        assert all(ctx == {"version": 2} for ctx in received)
        count = len(received)
        await dbos.delete_schedule("replaceable-fast")
        await dbos.create_schedule(
            schedule_name="replaceable-fast",
            workflow_fn=scheduled,
            schedule="* * * * * *",
            context={"version": 3},
        )
        await fired(received, 2, matching={"version": 3}, since=count)
        await dbos.delete_schedule("replaceable-fast")


async def test_client_apply_schedules(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_client_apply_schedules

    A schedule input is a class here (upstream: a TypedDict), so one missing a required
    field is refused as it is built, with a ``TypeError`` (upstream raises
    ``DBOSException("missing required field ...")`` from ``apply_schedules``)."""
    from dbos_trio import Client, ClientScheduleInput

    async with Client(dbos_url) as client:
        await client.apply_schedules(
            [
                ClientScheduleInput(
                    schedule_name="sched-a",
                    workflow_name="wf.a",
                    schedule="* * * * *",
                    context={"region": "eu"},
                ),
                ClientScheduleInput(
                    schedule_name="sched-b",
                    workflow_name="wf.b",
                    schedule="0 0 * * *",
                    automatic_backfill=True,
                    cron_timezone="America/Los_Angeles",
                ),
            ]
        )
        by_name = {s.schedule_name: s for s in await client.list_schedules()}
        assert sorted(by_name) == ["sched-a", "sched-b"]
        assert by_name["sched-a"].schedule == "* * * * *"
        assert by_name["sched-a"].context == {"region": "eu"}
        assert by_name["sched-a"].automatic_backfill is False
        assert by_name["sched-a"].cron_timezone is None
        assert by_name["sched-b"].workflow_name == "wf.b"
        assert by_name["sched-b"].context is None
        assert by_name["sched-b"].automatic_backfill is True
        assert by_name["sched-b"].cron_timezone == "America/Los_Angeles"
        await client.apply_schedules(
            [
                ClientScheduleInput(
                    schedule_name="sched-a", workflow_name="wf.a", schedule="0 * * * *"
                ),
                ClientScheduleInput(
                    schedule_name="sched-c",
                    workflow_name="wf.c",
                    schedule="*/5 * * * *",
                    context=[1, 2],
                ),
            ]
        )
        by_name = {s.schedule_name: s for s in await client.list_schedules()}
        assert len(by_name) == 3
        assert (by_name["sched-a"].schedule, by_name["sched-a"].context) == ("0 * * * *", None)
        assert (by_name["sched-c"].schedule, by_name["sched-c"].context) == ("*/5 * * * *", [1, 2])
        with pytest.raises(DBOSException, match="Invalid cron schedule"):
            await client.apply_schedules(
                [
                    ClientScheduleInput(
                        schedule_name="bad", workflow_name="wf.x", schedule="not a cron"
                    )
                ]
            )
        for missing in ("schedule_name", "workflow_name", "schedule"):
            fields = {"schedule_name": "x", "workflow_name": "wf.x", "schedule": "* * * * *"}
            del fields[missing]
            with pytest.raises(TypeError, match=missing):
                ClientScheduleInput(**fields)
        for name in ("sched-a", "sched-b", "sched-c"):
            await client.delete_schedule(name)
        assert await client.list_schedules() == []


async def test_client_apply_schedules_optional_context(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_scheduler.py::test_client_apply_schedules_optional_context"""
    from dbos_trio import Client, ClientScheduleInput

    received: list[tuple[datetime, Any]] = []

    @dbos.workflow(name="scheduled_workflow")
    async def scheduled(scheduled_at: datetime, ctx: Any) -> None:
        received.append((scheduled_at, ctx))

    async with dbos.launched(), Client(dbos_url) as client:
        await client.apply_schedules(
            [
                ClientScheduleInput(
                    schedule_name="no-context",
                    workflow_name="scheduled_workflow",
                    schedule="0 0 * * *",
                )
            ]
        )
        [listed] = await client.list_schedules()
        assert listed.schedule_name == "no-context" and listed.context is None
        await (await client.trigger_schedule("no-context")).get_result()
        assert [ctx for _, ctx in received] == [None]
        await client.delete_schedule("no-context")
        assert await client.list_schedules() == []


async def test_static_class_method_schedule(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_scheduler.py::test_static_class_method_schedule"""
    received: list[Any] = []

    class MyScheduledClass:
        @staticmethod
        @dbos.workflow()
        async def scheduled_wf(scheduled_at: datetime, ctx: Any) -> None:
            received.append(ctx)

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="static-class-schedule",
            workflow_fn=MyScheduledClass.scheduled_wf,
            schedule="* * * * * *",
            context={"class": True},
        )
        schedule = await dbos.get_schedule("static-class-schedule")
        assert schedule is not None
        assert schedule.workflow_name == MyScheduledClass.scheduled_wf.__qualname__
        assert schedule.workflow_class_name is None  # a static method names no class
        assert schedule.context == {"class": True}
        await fired(received, 2)
        assert all(ctx == {"class": True} for ctx in received)
        await (await dbos.trigger_schedule("static-class-schedule")).get_result()
        assert received[-1] == {"class": True}
        await dbos.delete_schedule("static-class-schedule")
        await dbos.create_schedule(
            schedule_name="static-class-backfill",
            workflow_fn=MyScheduledClass.scheduled_wf,
            schedule="0 * * * *",
            context={"backfill": True},
        )
        start = datetime(2025, 1, 1, 0, 30, tzinfo=UTC)
        handles = await dbos.backfill_schedule(
            "static-class-backfill", start, start + timedelta(hours=3)
        )
        assert len(handles) == 3
        for handle in handles:
            await handle.get_result()
        await dbos.delete_schedule("static-class-backfill")


async def test_automatic_backfill_on_restart(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_scheduler.py::test_automatic_backfill_on_restart

    ``last_fired_at`` is set in the row directly (upstream: a private ``_sys_db`` call)."""
    from support.backends import execute

    received: list[datetime] = []

    @dbos.workflow()
    async def hourly(scheduled_at: datetime, ctx: Any) -> None:
        received.append(scheduled_at)

    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="backfill-restart",
            workflow_fn=hourly,
            schedule="0 * * * *",
            automatic_backfill=True,
        )
        three_hours_ago = datetime.fromtimestamp(await dbos.now(), UTC) - timedelta(hours=3)
        await execute(
            dbos_url,
            "UPDATE {t}workflow_schedules SET last_fired_at = %s WHERE schedule_name = %s",
            three_hours_ago.isoformat(),
            "backfill-restart",
        )
        schedule = await dbos.get_schedule("backfill-restart")
        assert schedule is not None and schedule.automatic_backfill is True
        assert schedule.last_fired_at is not None
        assert datetime.fromisoformat(schedule.last_fired_at) == three_hours_ago
    received.clear()  # an hour may have been crossed meanwhile; the restart is the point
    async with dbos.launched():
        # The scheduler backfills the ticks missed since last_fired_at at launch.
        for _ in range(600):
            if len(received) >= 3:
                break
            await trio.sleep(0.5)
        now = datetime.fromtimestamp(await dbos.now(), UTC)
        backfilled = sorted(received)[:3]
        assert len(backfilled) == 3
        for tick in backfilled:
            assert three_hours_ago < tick <= now
            assert (tick.minute, tick.second) == (0, 0)
        await dbos.delete_schedule("backfill-restart")


async def test_scheduled_workflow_datetime_with_portable_serializer(
    dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_scheduler.py::test_scheduled_workflow_datetime_with_portable_serializer"""  # noqa: E501
    from dbos_trio import Config, PortableJSONSerializer

    dbos = DBOS(
        Config(app_name="wf-tests", database_url=dbos_url, serializer=PortableJSONSerializer())
    )
    received: list[tuple[Any, Any]] = []

    @dbos.workflow()
    async def scheduled(scheduled_at: datetime, ctx: Any) -> None:
        received.append((scheduled_at, ctx))

    class ScheduledClass:
        @classmethod
        @dbos.workflow()
        async def scheduled_wf(cls, scheduled_at: datetime, ctx: Any) -> None:
            received.append((scheduled_at, ctx))

    async with dbos.launched():
        for name, workflow, context in (
            ("portable-schedule", scheduled, {"env": "test"}),
            ("portable-class-schedule", ScheduledClass.scheduled_wf, {"env": "cls"}),
        ):
            await dbos.create_schedule(
                schedule_name=name,
                workflow_fn=workflow,
                schedule=daily_cron_far_from_now(),
                context=context,
            )
            received.clear()
            await (await dbos.trigger_schedule(name)).get_result()
            [(scheduled_at, got)] = received
            assert got == context
            # Read back by the parameter's type (the class method's cls skipped), not as
            # the RFC 3339 string portable JSON stores.
            assert isinstance(scheduled_at, datetime)
            await dbos.delete_schedule(name)
