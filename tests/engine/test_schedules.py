"""Schedules through DBOS and the Client, on both backends: the rows, and every bad input
refused before anything is written.

Firing is covered under virtual time (test_schedules_virtual.py) and across processes
(tests/integration/test_schedule_processes.py); here the scheduler only has to stay out
of the way, so nothing fires within a test (yearly crons, or paused schedules).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from dbos_trio import (
    DBOS,
    Client,
    ClientScheduleInput,
    DBOSArgumentTypeError,
    DBOSConfiguredInstance,
    DBOSException,
    DBOSInvalidArgumentError,
    ScheduleInput,
)

from support.backends import execute, query
from support.time_fixtures import running

YEARLY = "0 0 1 1 *"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def schedule_rows(url: str, name: str) -> list[tuple[Any, ...]]:
    return await query(
        url,
        "SELECT schedule_name, workflow_name, workflow_class_name, schedule, status, "
        "last_fired_at, automatic_backfill, cron_timezone, queue_name, application_name, "
        "schedule_id FROM {t}workflow_schedules WHERE schedule_name = %s",
        name,
    )


def app_with_workflows(new_dbos: Callable[..., DBOS]) -> tuple[DBOS, dict[str, Any]]:
    dbos = new_dbos()
    queue = "q-" + dbos.app_name  # queue names are unique across applications
    dbos.register_queue(queue)

    @dbos.workflow(name="tick")
    async def tick(scheduled_time: datetime, context: Any) -> None:
        pass

    @dbos.workflow(name="wrong_shape")
    async def wrong_shape(a: int, b: int, c: int) -> None:
        pass

    class Jobs(DBOSConfiguredInstance):
        @dbos.workflow(name="Jobs.instance_tick")
        async def instance_tick(self, scheduled_time: datetime, context: Any) -> None:
            pass

        @classmethod
        @dbos.workflow(name="Jobs.class_tick")
        async def class_tick(cls, scheduled_time: datetime, context: Any) -> None:
            pass

    other = new_dbos(app_name="other-app-" + uuid.uuid4().hex[:6])

    @other.workflow(name="foreign")
    async def foreign(scheduled_time: datetime, context: Any) -> None:
        pass

    return dbos, {
        "tick": tick,
        "wrong_shape": wrong_shape,
        "instance": Jobs(unique("cfg")).instance_tick,
        "class": Jobs.class_tick,
        "foreign": foreign,
        "queue": queue,
    }


async def test_a_schedule_is_stored_as_the_official_sdk_stores_it(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos, fns = app_with_workflows(new_dbos)
    name = unique("stored")
    async with running(dbos):
        await dbos.create_schedule(
            schedule_name=name,
            workflow=fns["tick"],
            schedule=YEARLY,
            context={"region": "eu", "n": 3},
            automatic_backfill=True,
            cron_timezone="Europe/Paris",
            queue_name=fns["queue"],
        )
        schedule = await dbos.get_schedule(name)
        class_name = unique("classy")
        await dbos.create_schedule(schedule_name=class_name, workflow=fns["class"], schedule=YEARLY)
        by_prefix = await dbos.list_schedules(schedule_name_prefix=name[:12])
        classy = await dbos.get_schedule(class_name)
    [row] = await schedule_rows(db_url, name)
    queue = fns["queue"]
    assert row[:10] == (
        name, "tick", None, YEARLY, "ACTIVE", None, True, "Europe/Paris", queue, dbos.app_name,
    )  # fmt: skip
    assert schedule is not None and schedule.context == {"region": "eu", "n": 3}
    assert schedule.schedule_id == row[10] and schedule.automatic_backfill is True
    assert [s.schedule_name for s in by_prefix] == [name]
    assert classy is not None and classy.workflow_class_name is not None
    assert classy.workflow_class_name.endswith("Jobs")


@pytest.mark.parametrize(
    ("case", "error", "match"),
    [
        ("cron", DBOSInvalidArgumentError, "Invalid cron schedule"),
        ("timezone", DBOSInvalidArgumentError, "Invalid timezone"),
        ("unregistered", DBOSException, "not a registered workflow"),
        ("other app's workflow", DBOSException, "is not registered"),
        ("queue", DBOSException, "Queue 'nowhere' is not declared"),
        ("signature", DBOSArgumentTypeError, r"\(scheduled_time: datetime, context\)"),
        ("instance method", DBOSException, "instance methods cannot be used"),
        ("name", DBOSInvalidArgumentError, "schedule_name"),
        ("context", DBOSInvalidArgumentError, "context of schedule"),
        ("duplicate", DBOSException, "already exists"),
    ],
)
async def test_bad_input_is_refused_before_anything_is_written(
    new_dbos: Callable[..., DBOS], db_url: str, case: str, error: type[Exception], match: str
) -> None:
    dbos, fns = app_with_workflows(new_dbos)
    name = unique("bad")

    async def plain(scheduled_time: datetime, context: Any) -> None:
        pass

    arguments: dict[str, Any] = {"schedule_name": name, "workflow": fns["tick"], "schedule": YEARLY}
    if case == "cron":
        arguments["schedule"] = "61 * * * *"
    elif case == "timezone":
        arguments["cron_timezone"] = "Nowhere/Atlantis"
    elif case == "unregistered":
        arguments["workflow"] = plain
    elif case == "other app's workflow":
        arguments["workflow"] = fns["foreign"]
    elif case == "queue":
        arguments["queue_name"] = "nowhere"
    elif case == "signature":
        arguments["workflow"] = fns["wrong_shape"]
    elif case == "instance method":
        arguments["workflow"] = fns["instance"]
    elif case == "name":
        arguments["schedule_name"] = ""
    elif case == "context":
        arguments["context"] = lambda: None  # not picklable
    async with running(dbos):
        if case == "duplicate":
            await dbos.create_schedule(**{**arguments, "schedule": "0 0 2 1 *"})
        before = await schedule_rows(db_url, name)
        with pytest.raises(error, match=match):
            await dbos.create_schedule(**arguments)
        if case != "duplicate":  # applying a name that exists redefines it
            fine = ScheduleInput(
                schedule_name=unique("fine"), workflow=fns["tick"], schedule=YEARLY
            )
            with pytest.raises(error, match=match):
                await dbos.apply_schedules([fine, ScheduleInput(**arguments)])
    # Nothing written: the duplicate keeps its first definition, and the batch none of it.
    assert await schedule_rows(db_url, name) == before
    if case == "duplicate":
        assert before[0][3] == "0 0 2 1 *"
    batch = await query(
        db_url,
        "SELECT count(*) FROM {t}workflow_schedules "
        "WHERE schedule_name LIKE 'fine-%%' AND application_name = %s",
        dbos.app_name,
    )
    assert batch == [(0,)]


async def test_apply_schedules_redefines_keeping_id_status_and_last_fired_at(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos, fns = app_with_workflows(new_dbos)
    name = unique("applied")
    async with running(dbos):
        await dbos.apply_schedules(
            [ScheduleInput(schedule_name=name, workflow=fns["tick"], schedule=YEARLY, context=1)]
        )
        [before] = await schedule_rows(db_url, name)
        await dbos.pause_schedule(name)
        await execute(
            db_url,
            "UPDATE {t}workflow_schedules SET last_fired_at = %s WHERE schedule_name = %s",
            "2026-01-01T00:00:00+00:00",
            name,
        )
        await dbos.apply_schedules(
            [
                ScheduleInput(
                    schedule_name=name,
                    workflow=fns["tick"],
                    schedule="0 0 2 1 *",
                    context=2,
                    cron_timezone="Asia/Tokyo",
                )
            ]
        )
        after = await dbos.get_schedule(name)
    assert after is not None
    assert (after.schedule_id, after.status, after.last_fired_at) == (
        before[10], "PAUSED", "2026-01-01T00:00:00+00:00",
    )  # fmt: skip
    assert (after.schedule, after.context, after.cron_timezone) == ("0 0 2 1 *", 2, "Asia/Tokyo")


async def test_pause_resume_and_delete_change_the_row_and_listing_filters(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos, fns = app_with_workflows(new_dbos)
    a, b = unique("pa"), unique("pb")
    async with running(dbos):
        for name in (a, b):
            await dbos.create_schedule(schedule_name=name, workflow=fns["tick"], schedule=YEARLY)
        await dbos.pause_schedule(a)
        paused = [s.schedule_name for s in await dbos.list_schedules(status="PAUSED")]
        active = [s.schedule_name for s in await dbos.list_schedules(status=["ACTIVE"])]
        await dbos.resume_schedule(a)
        resumed = await dbos.get_schedule(a)
        await dbos.delete_schedule(b)
        await dbos.delete_schedule(b)  # deleting what is gone is no error
        left = [s.schedule_name for s in await dbos.list_schedules(workflow_name="tick")]
        assert await dbos.list_schedules(status="SLEEPING") == []  # as dbos 3.4
        with pytest.raises(DBOSException, match="does not exist"):
            await dbos.trigger_schedule(b)
    assert paused == [a] and active == [b]
    assert resumed is not None and resumed.status == "ACTIVE"
    assert left == [a]
    assert await schedule_rows(db_url, b) == []


async def test_a_client_manages_schedules_by_workflow_name(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos, _ = app_with_workflows(new_dbos)
    name, unclaimed = unique("client"), unique("unclaimed")
    async with running(dbos), Client(db_url, app_name=dbos.app_name) as client:
        await client.create_schedule(
            schedule_name=name, workflow_name="tick", schedule=YEARLY, context=[1, 2]
        )
        await client.apply_schedules(
            [ClientScheduleInput(schedule_name=unclaimed, workflow_name="tick", schedule=YEARLY)]
        )
        seen_by_app = {s.schedule_name for s in await dbos.list_schedules()}
        with pytest.raises(DBOSException, match="Queue 'absent' is not declared"):
            await client.create_schedule(
                schedule_name=unique("x"),
                workflow_name="tick",
                schedule=YEARLY,
                queue_name="absent",
            )
        await client.pause_schedule(name)
        got = await client.get_schedule(name)
    async with Client(db_url) as anonymous:
        await anonymous.create_schedule(
            schedule_name=unique("nobody"), workflow_name="tick", schedule=YEARLY
        )
        listed_by_other = {
            s.schedule_name for s in await anonymous.list_schedules(application_name="someone-else")
        }
    assert {name, unclaimed} <= seen_by_app
    assert got is not None and got.status == "PAUSED" and got.context == [1, 2]
    assert got.application_name == dbos.app_name
    # Another application sees only its own and the unclaimed ones.
    assert name not in listed_by_other


async def test_a_schedule_name_owned_by_another_application_is_not_taken_over(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos, fns = app_with_workflows(new_dbos)
    name = unique("owned")
    async with Client(db_url, app_name="the-owner") as owner:
        await owner.create_schedule(schedule_name=name, workflow_name="tick", schedule=YEARLY)
    async with running(dbos):
        with pytest.raises(DBOSException, match="belongs to application 'the-owner'"):
            await dbos.apply_schedules(
                [ScheduleInput(schedule_name=name, workflow=fns["tick"], schedule="0 0 2 1 *")]
            )
    [row] = await schedule_rows(db_url, name)
    assert (row[3], row[9]) == (YEARLY, "the-owner")


async def test_schedule_calls_in_a_workflow_are_checkpoints_and_firing_calls_are_refused(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos, fns = app_with_workflows(new_dbos)
    name = unique("inside")

    @dbos.workflow()
    async def manager() -> list[str]:
        await dbos.create_schedule(schedule_name=name, workflow=fns["tick"], schedule=YEARLY)
        await dbos.pause_schedule(name)
        listed = await dbos.list_schedules(schedule_name_prefix=name)
        with pytest.raises(DBOSException, match="cannot be called from within a workflow"):
            await dbos.trigger_schedule(name)
        with pytest.raises(DBOSException, match="cannot be called from within a workflow"):
            await dbos.backfill_schedule(name, datetime(2026, 1, 1, tzinfo=UTC), datetime.now(UTC))
        return [s.status for s in listed]

    async with running(dbos):
        handle = await dbos.start_workflow(manager)
        assert await handle.get_result() == ["PAUSED"]
        steps = [s.function_name for s in await dbos.list_workflow_steps(handle.workflow_id)]
    assert steps == ["DBOS.createSchedule", "DBOS.pauseSchedule", "DBOS.listSchedules"]


async def test_a_declared_schedule_is_applied_at_every_launch_keeping_its_status(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    name = unique("declared")

    @dbos.scheduled(YEARLY, name=name, context="ctx", cron_timezone="UTC")
    @dbos.workflow(name="declared_tick")
    async def declared_tick(scheduled_time: datetime, context: Any) -> None:
        pass

    with pytest.raises(DBOSInvalidArgumentError, match="Invalid cron schedule"):
        dbos.scheduled("not cron")
    with pytest.raises(DBOSArgumentTypeError, match="scheduled_time"):

        @dbos.scheduled(YEARLY)
        @dbos.workflow(name="no_arguments")
        async def no_arguments() -> None:
            pass

    async with running(dbos):
        first = await dbos.get_schedule(name)
        await dbos.pause_schedule(name)
    async with running(dbos):
        again = await dbos.get_schedule(name)
    assert first is not None and first.context == "ctx" and first.workflow_name == "declared_tick"
    assert again is not None and again.status == "PAUSED"
    assert again.schedule_id == first.schedule_id


async def test_a_declared_schedule_on_an_undeclared_queue_fails_the_launch_writing_nothing(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    name = unique("declared-bad")

    @dbos.scheduled(YEARLY, name=name, queue_name="never_declared")
    @dbos.workflow(name="queued_tick")
    async def queued_tick(scheduled_time: datetime, context: Any) -> None:
        pass

    with pytest.raises(DBOSException, match="never_declared"):
        async with running(dbos):
            pass
    assert await schedule_rows(db_url, name) == []
