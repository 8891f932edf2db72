"""Port of the official SDK's ``tests/test_scheduler.py``: schedules created, listed,
applied, fired, paused, backfilled and triggered at run time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

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
