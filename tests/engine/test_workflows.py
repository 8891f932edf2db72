"""Durable workflows: registration, idempotent starts, replay, conflicts, context.

Every test runs against its own migrated system database, once on PostgreSQL and once on
SQLite, and asserts what a user can observe: return values, raised errors and the rows
left in the system database.
"""

from __future__ import annotations

import gc
import uuid
import weakref
from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import (
    DBOS,
    Config,
    DBOSAwaitedWorkflowCancelledError,
    DBOSConflictingWorkflowError,
    DBOSException,
    DBOSNotLaunchedError,
    DBOSUnexpectedStepError,
    SetEnqueueOptions,
    SetWorkflowID,
    SystemDatabaseError,
)
from dbos_trio._sysdb.errors import ConnectionLost

from support.backends import count_rows, execute, status_row, steps_of
from support.dbos_fixtures import reexecute

MakeDBOS = Callable[..., DBOS]


async def test_running_a_workflow_twice_by_id_runs_its_body_and_each_step_once(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"body": 0, "first": 0, "second": 0}

    @dbos.step()
    async def first(text: str) -> str:
        runs["first"] += 1
        return text + "1"

    @dbos.step()
    async def second(text: str) -> str:
        runs["second"] += 1
        return text

    @dbos.workflow()
    async def greet(a: str, b: str) -> str:
        runs["body"] += 1
        return await first(b) + await second(a)

    async with dbos.launched():
        with SetWorkflowID("greet-1"):
            assert await greet("alice", "bob") == "bob1alice"
        with SetWorkflowID("greet-1"):
            assert await greet("alice", "bob") == "bob1alice"
        # Even different arguments: the id decides, the stored outcome comes back.
        with SetWorkflowID("greet-1"):
            assert await greet("carol", "dave") == "bob1alice"
        with SetWorkflowID("greet-1"):
            handle = await dbos.start_workflow(greet, "alice", "bob")
        assert await handle.get_result() == "bob1alice"

    assert runs == {"body": 1, "first": 1, "second": 1}
    row = await status_row(dbos_url, "greet-1")
    assert row["status"] == "SUCCESS"
    assert row["recovery_attempts"] == 1
    assert await steps_of(dbos_url, "greet-1") == [
        (1, first.__qualname__, None),
        (2, second.__qualname__, None),
    ]


async def test_repeating_a_start_never_bumps_recovery_attempts(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        for _ in range(5):
            with SetWorkflowID("noop-1"):
                await noop()
            row = await status_row(dbos_url, "noop-1")
            assert row["recovery_attempts"] == 1
            assert row["updated_at"] >= row["created_at"]
    assert await count_rows(dbos_url, "workflow_status") == 1


async def test_a_workflow_reexecuted_from_its_row_replays_its_steps_without_running_them(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"body": 0, "step": 0}

    @dbos.step()
    async def double(x: int) -> int:
        runs["step"] += 1
        return 2 * x

    @dbos.workflow()
    async def compute(x: int) -> int:
        runs["body"] += 1
        return await double(x) + await double(x + 1)

    async with dbos.launched():
        with SetWorkflowID("compute-1"):
            assert await compute(5) == 22
        assert await reexecute(dbos, dbos_url, compute, "compute-1") == 22

    assert runs == {"body": 2, "step": 2}
    assert (await status_row(dbos_url, "compute-1"))["status"] == "SUCCESS"
    assert len(await steps_of(dbos_url, "compute-1")) == 2


async def test_a_recorded_step_error_replays_without_rerunning_the_step(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"step": 0}

    @dbos.step()
    async def explode(text: str) -> str:
        runs["step"] += 1
        raise ValueError(text)

    @dbos.workflow()
    async def catching() -> str:
        try:
            await explode("boom")
        except ValueError as error:
            return f"caught {type(error).__name__}({error})"
        return "not raised"

    async with dbos.launched():
        with SetWorkflowID("catching-1"):
            assert await catching() == "caught ValueError(boom)"
        assert runs["step"] == 1
        assert await reexecute(dbos, dbos_url, catching, "catching-1") == "caught ValueError(boom)"
        steps = await dbos.list_workflow_steps("catching-1")

    assert runs["step"] == 1
    assert len(steps) == 1
    assert steps[0].output is None
    assert isinstance(steps[0].error, ValueError)
    assert str(steps[0].error) == "boom"


async def test_a_failed_workflow_called_again_by_id_reraises_its_error_without_running(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"body": 0}

    @dbos.workflow()
    async def fail(text: str) -> None:
        runs["body"] += 1
        raise ValueError(text)

    async with dbos.launched():
        for _ in range(3):
            with SetWorkflowID("fail-1"), pytest.raises(ValueError, match=r"^x$"):
                await fail("x")
        with SetWorkflowID("fail-1"):
            handle = await dbos.start_workflow(fail, "x")
        with pytest.raises(ValueError, match=r"^x$"):
            await handle.get_result()

    assert runs["body"] == 1
    row = await status_row(dbos_url, "fail-1")
    assert row["status"] == "ERROR"
    assert row["recovery_attempts"] == 1


async def test_a_different_function_under_an_existing_id_raises_conflicting_workflow_error(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"other": 0}

    @dbos.workflow()
    async def original() -> str:
        return "original"

    @dbos.workflow()
    async def other() -> str:
        runs["other"] += 1
        return "other"

    async with dbos.launched():
        with SetWorkflowID("shared-id"):
            assert await original() == "original"
        with SetWorkflowID("shared-id"), pytest.raises(DBOSConflictingWorkflowError) as raised:
            await other()
        with SetWorkflowID("shared-id"), pytest.raises(DBOSConflictingWorkflowError):
            await dbos.start_workflow(other)

    assert raised.value.dbos_error_code == 9
    assert "shared-id" in str(raised.value)
    assert runs["other"] == 0
    row = await status_row(dbos_url, "shared-id")
    assert (row["name"], row["status"], row["recovery_attempts"]) == (
        original.__qualname__,
        "SUCCESS",
        1,
    )


unexpected_step_uses_b = False


async def test_a_different_step_at_a_recorded_id_raises_unexpected_step_error(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    global unexpected_step_uses_b
    unexpected_step_uses_b = False
    dbos = make_dbos()
    runs = {"a": 0, "b": 0}

    @dbos.step()
    async def step_a() -> str:
        runs["a"] += 1
        return "a"

    @dbos.step()
    async def step_b() -> str:
        runs["b"] += 1
        return "b"

    @dbos.workflow()
    async def changing() -> str:
        # The "code change": the same workflow calls a different step at id 1.
        return await (step_b() if unexpected_step_uses_b else step_a())

    async with dbos.launched():
        with SetWorkflowID("changing-1"):
            assert await changing() == "a"
        unexpected_step_uses_b = True
        with pytest.raises(DBOSUnexpectedStepError) as raised:
            await reexecute(dbos, dbos_url, changing, "changing-1")

    assert raised.value.dbos_error_code == 11
    assert step_a.__qualname__ in str(raised.value)
    assert step_b.__qualname__ in str(raised.value)
    assert runs == {"a": 1, "b": 0}
    assert await steps_of(dbos_url, "changing-1") == [(1, step_a.__qualname__, None)]
    # The error is the re-execution's own outcome, recorded like any other error.
    assert (await status_row(dbos_url, "changing-1"))["status"] == "ERROR"


async def test_a_pending_workflow_is_waited_on_by_a_second_caller_not_run_again(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    release = trio.Event()
    runs = {"body": 0}

    @dbos.workflow()
    async def gated() -> str:
        runs["body"] += 1
        await release.wait()
        return "done"

    results: list[str] = []

    async def call_again() -> None:
        with SetWorkflowID("gated-1"):
            results.append(await gated())

    async with dbos.launched():
        with SetWorkflowID("gated-1"):
            handle = await dbos.start_workflow(gated)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call_again)
            nursery.start_soon(call_again)
            await trio.sleep(0.1)
            assert results == []
            assert (await handle.get_status()).status == "PENDING"
            release.set()
        assert await handle.get_result() == "done"

    assert results == ["done", "done"]
    assert runs["body"] == 1


async def test_only_the_first_workflow_started_in_a_set_workflow_id_block_takes_the_id(
    make_dbos: MakeDBOS, dbos_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def whoami() -> str | None:
        return dbos.workflow_id

    async with dbos.launched():
        with SetWorkflowID("first-id"):
            first = await whoami()
            second = await whoami()
    assert first == "first-id"
    assert second is not None and second != "first-id"
    assert "SetWorkflowID('first-id') was taken" in caplog.text
    uuid.UUID(second)
    assert await count_rows(dbos_url, "workflow_status") == 2


async def test_workflow_id_and_step_id_are_visible_inside_workflows_and_steps(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    seen: list[tuple[str, str | None, int | None]] = []

    @dbos.step()
    async def async_step() -> None:
        seen.append(("async step", dbos.workflow_id, dbos.step_id))

    @dbos.step()
    def sync_step() -> None:
        seen.append(("sync step", dbos.workflow_id, dbos.step_id))

    @dbos.workflow()
    async def observed() -> None:
        seen.append(("body", dbos.workflow_id, dbos.step_id))
        await async_step()
        await sync_step()
        seen.append(("body after", dbos.workflow_id, dbos.step_id))

    async with dbos.launched():
        seen.append(("outside", dbos.workflow_id, dbos.step_id))
        with SetWorkflowID("observed-1"):
            await observed()

    assert seen == [
        ("outside", None, None),
        ("body", "observed-1", None),
        ("async step", "observed-1", 1),
        ("sync step", "observed-1", 2),
        ("body after", "observed-1", None),
    ]


async def test_a_workflow_function_that_is_not_async_raises_type_error_at_decoration(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    def plain() -> int:
        return 1

    with pytest.raises(TypeError, match="async def"):
        dbos.workflow()(plain)  # type: ignore[arg-type]


async def test_registering_after_launch_raises_and_works_again_after_exit(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    async def late() -> None:
        return None

    async with dbos.launched():
        with pytest.raises(DBOSException, match="register"):
            dbos.workflow()(late)
        with pytest.raises(DBOSException, match="register"):
            dbos.step()(late)

    registered = dbos.workflow()(late)
    async with dbos.launched():
        assert await registered() is None


async def test_calling_a_workflow_before_launch_raises_not_launched(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def early() -> None:
        return None

    with pytest.raises(DBOSNotLaunchedError, match="early"):
        await early()
    with pytest.raises(DBOSNotLaunchedError):
        await dbos.start_workflow(early)


async def test_a_registered_closure_does_not_keep_its_dbos_instance_alive(dbos_url: str) -> None:
    dbos = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="1"))
    calls: list[str] = []

    @dbos.step()
    async def step() -> None:
        calls.append("step")

    @dbos.workflow()
    async def closure() -> None:
        await step()
        calls.append("workflow")

    async with dbos.launched():
        await closure()
    assert calls == ["step", "workflow"]
    # The decorated functions stay alive (as module-level ones would); the instance must not.
    reference = weakref.ref(dbos)
    del dbos
    gc.collect()
    assert reference() is None
    with pytest.raises(DBOSException, match="no longer exists"):
        await closure()
    await step()  # outside any workflow a step stays a plain call
    assert calls == ["step", "workflow", "step"]


async def test_two_registrations_under_one_name_from_one_module_keep_the_last(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    @dbos.workflow(name="renamed")
    async def first() -> str:
        return "first"

    @dbos.workflow(name="renamed")
    async def second() -> str:
        return "second"

    async with dbos.launched():
        assert await second() == "second"
        status = await dbos.list_workflows(name="renamed")
    assert [s.name for s in status] == ["renamed"]


async def test_a_workflow_returning_none_is_stored_as_success_with_none(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def nothing() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("nothing-1"):
            assert await nothing() is None
        handle = await dbos.retrieve_workflow("nothing-1")
        assert await handle.get_result() is None
        status = await handle.get_status()
    assert status.status == "SUCCESS"
    assert status.output is None


async def test_an_execution_that_lost_its_row_records_nothing_and_adopts_the_owners_outcome(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos(outcome_poll_interval=0.05)
    ready = trio.Event()
    release = trio.Event()

    @dbos.workflow()
    async def stolen() -> str:
        ready.set()
        await release.wait()
        return "never stored"

    outcome: list[Any] = []

    async def run() -> None:
        try:
            with SetWorkflowID("stolen-1"):
                outcome.append(await stolen())
        except Exception as error:
            outcome.append(error)

    async with dbos.launched(), trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await ready.wait()
        # Another execution takes the row over (what a recovery claim does).
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET owner_xid = 'someone-else' "
            "WHERE workflow_uuid = 'stolen-1'",
        )
        release.set()
        await trio.sleep(0.3)
        assert outcome == []  # the loser waits for the owner's outcome
        assert (await status_row(dbos_url, "stolen-1"))["status"] == "PENDING"
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'CANCELLED', owner_xid = NULL "
            "WHERE workflow_uuid = 'stolen-1'",
        )
    assert len(outcome) == 1
    assert isinstance(outcome[0], DBOSAwaitedWorkflowCancelledError)
    assert await count_rows(dbos_url, "workflow_output") == 0


async def test_a_system_database_failure_is_control_and_never_the_outcome(
    make_dbos: MakeDBOS, dbos_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbos = make_dbos()
    runs = {"step": 0}

    @dbos.step()
    async def work() -> str:
        runs["step"] += 1
        return "worked"

    @dbos.workflow()
    async def swallowing() -> str:
        try:
            return await work()
        except Exception:  # user code that swallows everything must not hide the failure
            return "swallowed"

    async with dbos.launched():
        sysdb = dbos._require_executor("test").sysdb

        async def broken_record_step(*args: Any, **kwargs: Any) -> None:
            # What a backend raises when its retries give up on a lost connection.
            raise ConnectionLost("connection lost")

        monkeypatch.setattr(sysdb, "record_step", broken_record_step)
        with SetWorkflowID("dbfail-1"), pytest.raises(SystemDatabaseError):
            await swallowing()
        row = await status_row(dbos_url, "dbfail-1")
        assert (row["status"], row["completed_at"]) == ("PENDING", None)
        assert await count_rows(dbos_url, "workflow_output") == 0
        assert await steps_of(dbos_url, "dbfail-1") == []
        monkeypatch.undo()
        # Recovery runs it again from its last checkpoint: the step runs once more.
        assert await reexecute(dbos, dbos_url, swallowing, "dbfail-1") == "worked"
    assert runs["step"] == 2
    assert (await status_row(dbos_url, "dbfail-1"))["status"] == "SUCCESS"


@pytest.mark.parametrize(
    "option",
    [
        {"deduplication_id": "d"},
        {"priority": 5},
        {"queue_partition_key": "k"},
        {"delay_seconds": 30},
        {"duplication_policy": "return-existing"},
    ],
)
async def test_enqueue_only_options_on_a_start_that_is_not_an_enqueue_raise_and_write_nothing(
    make_dbos: MakeDBOS, dbos_url: str, option: dict[str, Any]
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def plain() -> str:
        return "ran"

    async with dbos.launched():
        with SetEnqueueOptions(**option), SetWorkflowID("not-enqueued"):
            with pytest.raises(DBOSException, match=next(iter(option))) as raised:
                await plain()
            with pytest.raises(DBOSException, match=r"not being enqueued|requires a queue"):
                await dbos.start_workflow(plain)
    assert "queue" in str(raised.value)
    assert await count_rows(dbos_url, "workflow_status") == 0


async def test_an_app_version_enqueue_option_pins_the_version_of_a_started_workflow(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def pinned() -> str:
        return "ran"

    async with dbos.launched():
        with SetEnqueueOptions(app_version="other-version"), SetWorkflowID("pinned-1"):
            handle = await dbos.start_workflow(pinned)
        assert await handle.get_result() == "ran"
        with SetWorkflowID("unpinned-1"):
            await pinned()
    assert (await status_row(dbos_url, "pinned-1"))["application_version"] == "other-version"
    assert (await status_row(dbos_url, "unpinned-1"))["application_version"] == "v1"


async def test_management_calls_from_a_workflow_body_are_checkpoints_with_cross_sdk_names(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()
    listed: list[int] = []

    @dbos.workflow()
    async def inspector() -> None:
        listed.append(len(await dbos.list_workflows()))
        listed.append(len(await dbos.list_queued_workflows()))
        await dbos.get_workflow_status("inspector-1")

    async with dbos.launched():
        with SetWorkflowID("inspector-1"):
            await inspector()
        # Replaying from the stored row answers from the checkpoints, not the database.
        await reexecute(dbos, dbos_url, inspector, "inspector-1")

    assert [name for _, name, _ in await steps_of(dbos_url, "inspector-1")] == [
        "DBOS.listWorkflows",
        "DBOS.listQueuedWorkflows",
        "DBOS.getStatus",
    ]
    assert listed[:2] == listed[2:]
