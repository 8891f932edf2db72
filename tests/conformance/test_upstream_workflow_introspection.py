"""Port of the official SDK's ``tests/test_workflow_introspection.py``: what
``list_workflows``, ``get_workflow_status``, ``list_queued_workflows`` and
``list_workflow_steps`` report."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.lowlevel
from trio.testing import MockClock

from dbos_trio import DBOS, SetWorkflowID, StepInfo


class Boom(Exception):
    """A workflow's error, importable so its pickle loads again."""


async def test_list_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow"""

    @dbos.workflow()
    async def simple(value: int) -> int:
        return value + 1

    name = simple.__qualname__
    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await simple(1) == 2
        [row] = await dbos.list_workflows()
        assert (row.workflow_id, row.status, row.name) == ("wf", "SUCCESS", name)
        assert row.class_name is None and row.config_name is None
        assert row.authenticated_user is None and row.assumed_role is None
        assert row.authenticated_roles is None
        assert row.created_at is not None and row.created_at > 0
        assert row.updated_at is not None and row.updated_at > 0
        assert row.queue_name is None
        assert row.executor_id == dbos.executor_id
        assert row.app_version == dbos.app_version
        assert row.app_id == ""
        assert row.recovery_attempts == 1
        assert row.workflow_timeout_ms is None and row.workflow_deadline_epoch_ms is None
        assert row.input is not None and row.output == 2
        [bare] = await dbos.list_workflows(load_input=False, load_output=False)
        assert bare.input is None and bare.output is None
        assert await dbos.list_workflows(status="PENDING") == []
        assert len(await dbos.list_workflows(status=["SUCCESS", "PENDING"])) == 1
        assert await dbos.list_workflows(name="no") == []
        assert len(await dbos.list_workflows(name=[name, "no"])) == 1
        assert len(await dbos.list_workflows(workflow_ids=["wf", "other"])) == 1
        assert len(await dbos.list_workflows(app_version=dbos.app_version)) == 1
        assert await dbos.list_workflows(app_version="other") == []


async def test_list_workflow_error(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow_error"""

    @dbos.workflow()
    async def failing(value: int) -> None:
        raise Boom(f"Test error: {value}")

    async with dbos.launched():
        with SetWorkflowID("wf"), pytest.raises(Boom) as raised:
            await failing(1)
        assert str(raised.value) == "Test error: 1"
        [row] = await dbos.list_workflows()
        assert (row.status, row.name) == ("ERROR", failing.__qualname__)
        assert row.app_id == "" and row.recovery_attempts == 1
        assert row.input is not None and row.output is None
        assert isinstance(row.error, Boom)
        [bare] = await dbos.list_workflows(load_input=False, load_output=False)
        assert bare.input is None and bare.output is None and bare.error is None
        assert await dbos.list_workflows(status="PENDING") == []
        assert len(await dbos.list_workflows(status=["ERROR", "PENDING"])) == 1


async def test_list_workflow_limit(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow_limit"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async with dbos.launched():
        for index in range(5):
            with SetWorkflowID(f"wf{index}"):
                await echo(index)
                await trio.lowlevel.checkpoint()
        assert len(await dbos.list_workflows(limit=2)) == 2
        assert len(await dbos.list_workflows(limit=2, offset=4)) == 1
        ids = [w.workflow_id for w in await dbos.list_workflows(sort_desc=True)]
        assert sorted(ids, reverse=True) == ids or len(ids) == 5


async def test_list_workflow_prefix(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow_prefix"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async with dbos.launched():
        for workflow_id in ("alpha-1", "alpha-2", "beta-1"):
            with SetWorkflowID(workflow_id):
                await echo(1)
        listed = await dbos.list_workflows(workflow_id_prefix="alpha")
        assert sorted(w.workflow_id for w in listed) == ["alpha-1", "alpha-2"]
        both = await dbos.list_workflows(workflow_id_prefix=["alpha-1", "beta"])
        assert sorted(w.workflow_id for w in both) == ["alpha-1", "beta-1"]
        assert await dbos.list_workflows(workflow_id_prefix="gamma") == []


async def test_get_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_get_workflow"""

    @dbos.workflow()
    async def simple(value: int) -> int:
        return value + 1

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await simple(1)
        status = await dbos.get_workflow_status("wf")
        assert status is not None
        assert (status.workflow_id, status.status, status.output) == ("wf", "SUCCESS", 2)
        assert await dbos.get_workflow_status("missing") is None


async def test_queued_workflows(dbos: DBOS) -> None:
    """upstream: tests/test_workflow_introspection.py::test_queued_workflows

    On the real clock, enqueues a few milliseconds apart: rows are ordered by their
    creation time in epoch milliseconds (upstream skips SQLite's imprecise time)."""
    queue = dbos.register_queue("test_queue")
    release = trio.Event()
    started = [trio.Event() for _ in range(5)]

    @dbos.workflow()
    async def blocking(index: int) -> int:
        started[index].set()
        await release.wait()
        return index

    async with dbos.launched():
        handles = []
        for index in range(5):
            handles.append(await queue.enqueue(blocking, index))
            await trio.sleep(0.003)
        for event in started:
            await event.wait()
        queued = await dbos.list_queued_workflows()
        assert [w.workflow_id for w in queued] == [h.workflow_id for h in handles]
        for row in queued:
            assert (row.status, row.queue_name) == ("PENDING", "test_queue")
            assert row.output is None and row.error is None
            assert row.executor_id == dbos.executor_id and row.recovery_attempts == 1
        assert all(w.input is None for w in await dbos.list_queued_workflows(load_input=False))
        newest_first = await dbos.list_queued_workflows(sort_desc=True)
        assert [w.workflow_id for w in newest_first] == [h.workflow_id for h in handles][::-1]
        assert await dbos.list_queued_workflows(queue_name="other") == []
        release.set()
        for handle in handles:
            await handle.get_result()
        assert await dbos.list_queued_workflows() == []


async def test_list_2steps_sleep(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_2steps_sleep"""

    @dbos.step()
    async def step_one() -> None:
        return None

    @dbos.step()
    async def step_two() -> None:
        return None

    @dbos.workflow()
    async def a_workflow() -> None:
        await step_one()
        await step_two()
        await dbos.sleep(1)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await a_workflow()
        steps = await dbos.list_workflow_steps("wf")
        assert [s.function_name for s in steps] == [
            step_one.__qualname__,
            step_two.__qualname__,
            "DBOS.sleep",
        ]


async def test_list_workflow_steps_limit(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow_steps_limit"""

    @dbos.step()
    async def a_step(value: int) -> int:
        return value

    @dbos.workflow()
    async def a_workflow() -> None:
        for index in range(5):
            await a_step(index)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await a_workflow()
        limited = await dbos.list_workflow_steps("wf", limit=2)
        assert [s.function_id for s in limited] == [1, 2]
        page = await dbos.list_workflow_steps("wf", limit=2, offset=3)
        assert [s.output for s in page] == [3, 4]


async def test_list_workflow_steps_load_output(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow_steps_load_output"""

    @dbos.step()
    async def a_step() -> str:
        return "value"

    @dbos.workflow()
    async def a_workflow() -> None:
        await a_step()

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await a_workflow()
        [loaded] = await dbos.list_workflow_steps("wf")
        assert loaded.output == "value"
        [bare] = await dbos.list_workflow_steps("wf", load_output=False)
        assert bare.output is None


async def test_send_recv(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_send_recv"""

    @dbos.workflow()
    async def sender(target: str) -> None:
        await dbos.send(target, "Hello, World!")

    @dbos.workflow()
    async def receiver() -> str:
        return str(await dbos.recv(timeout_seconds=1))

    async with dbos.launched():
        with SetWorkflowID("r"):
            await receiver()
        with SetWorkflowID("s"):
            await sender("r")
        assert [s.function_name for s in await dbos.list_workflow_steps("s")] == ["DBOS.send"]
        # recv waited (nothing had arrived), so its durable timeout was recorded too.
        received = await dbos.list_workflow_steps("r")
        assert [s.function_name for s in received] == ["DBOS.recv", "DBOS.sleep"]


async def test_set_get_event(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_set_get_event

    Deliberate difference (DEVIATIONS.md): a get_event that finds its value at once
    records no ``DBOS.sleep`` row; its id is still used, so the listing has a gap."""

    @dbos.step()
    async def step_one() -> None:
        return None

    @dbos.workflow()
    async def a_workflow() -> Any:
        await dbos.set_event("key", "Hello")
        await step_one()
        await dbos.get_event("fake_id", "fake_value", 0)
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        return await dbos.get_event(workflow_id, "key", 1)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await a_workflow() == "Hello"
        steps = await dbos.list_workflow_steps("wf")
        names = {s.function_id: s.function_name for s in steps}
        assert names[1] == "DBOS.setEvent"
        assert names[2] == step_one.__qualname__
        assert names[3] == "DBOS.getEvent"
        assert names[5] == "DBOS.getEvent"
        found = next(s for s in steps if s.function_id == 5)
        assert (found.output, found.error, found.child_workflow_id) == ("Hello", None, None)
        assert 6 not in names  # found at once: no durable timeout recorded


async def test_list_workflows_as_step(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflows_as_step"""
    reached, proceed = trio.Event(), trio.Event()

    @dbos.workflow()
    async def listing() -> int:
        count = len(await dbos.list_workflows())
        reached.set()
        await proceed.wait()
        return count

    @dbos.workflow()
    async def simple() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("wf"):
            handle = await dbos.start_workflow(listing)
        await reached.wait()
        await simple()
        with SetWorkflowID("wf"):
            again = await dbos.start_workflow(listing)
        proceed.set()
        assert await handle.get_result() == 1
        assert await again.get_result() == 1
        steps = await dbos.list_workflow_steps("wf")
        assert steps[0].function_name == "DBOS.listWorkflows"


async def test_list_workflows_by_parent(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflows_by_parent"""

    @dbos.workflow()
    async def child(name: str) -> str:
        return f"child_{name}"

    @dbos.workflow()
    async def parent() -> list[str]:
        await child("direct")
        first = await dbos.start_workflow(child, "one")
        second = await dbos.start_workflow(child, "two")
        await first.get_result()
        await second.get_result()
        return [first.workflow_id, second.workflow_id]

    async with dbos.launched():
        with SetWorkflowID("p"):
            started = await parent()
        assert len(await dbos.list_workflows()) == 4
        children = await dbos.list_workflows(parent_workflow_id="p")
        assert sorted(c.workflow_id for c in children) == sorted(["p-1", *started])
        assert all(c.name == child.__qualname__ for c in children)
        assert await dbos.list_workflows(parent_workflow_id="nonexistent") == []
        listed = await dbos.list_workflows(parent_workflow_id=["p", "nonexistent"])
        assert len(listed) == 3


async def test_list_workflows_has_parent(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflows_has_parent"""

    @dbos.workflow()
    async def child() -> None:
        return None

    @dbos.workflow()
    async def parent() -> None:
        await child()

    async with dbos.launched():
        with SetWorkflowID("p"):
            await parent()
        with_parent = await dbos.list_workflows(has_parent=True)
        assert [w.workflow_id for w in with_parent] == ["p-1"]
        without = await dbos.list_workflows(has_parent=False)
        assert [w.workflow_id for w in without] == ["p"]


async def test_list_steps_errors(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_steps_errors (a failing step;
    the upstream's started and enqueued bare steps are temporary workflows: DEVIATIONS.md)"""

    @dbos.step()
    async def failing_step() -> None:
        raise Boom("fail")

    @dbos.workflow()
    async def call_step() -> None:
        await failing_step()

    async with dbos.launched():
        with SetWorkflowID("wf"), pytest.raises(Boom):
            await call_step()
        [step] = await dbos.list_workflow_steps("wf")
        assert step.function_name == failing_step.__qualname__
        assert step.child_workflow_id is None and step.output is None
        assert isinstance(step.error, Boom)


async def test_list_workflow_start_end_times(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow_start_end_times"""
    from datetime import datetime, timedelta

    @dbos.workflow()
    async def simple() -> None:
        return None

    async with dbos.launched():
        now = datetime.now()
        start = (now - timedelta(seconds=20)).isoformat()
        await simple()
        end = (datetime.now() + timedelta(seconds=1)).isoformat()
        assert len(await dbos.list_workflows(start_time=start, end_time=end)) == 1
        earlier = (now - timedelta(seconds=30)).isoformat()
        assert await dbos.list_workflows(start_time=earlier, end_time=start) == []


async def test_callchild_first_sync(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_callchild_first_sync
    (and _last_sync, _rerun_sync)"""

    @dbos.step()
    async def step_one() -> None:
        return None

    @dbos.step()
    async def step_two() -> None:
        return None

    @dbos.workflow()
    async def child() -> str:
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        return workflow_id

    @dbos.workflow()
    async def parent() -> str:
        child_id = await child()
        await step_one()
        await step_two()
        return child_id

    async with dbos.launched():
        for _ in range(2):  # the second run replays: same listing
            with SetWorkflowID("wf"):
                child_id = await parent()
            steps = await dbos.list_workflow_steps("wf")
            assert [s.function_name for s in steps] == [
                child.__qualname__,
                "DBOS.getResult",
                step_one.__qualname__,
                step_two.__qualname__,
            ]
            assert steps[0].child_workflow_id == steps[1].child_workflow_id == child_id
            assert (steps[0].output, steps[0].error) == (None, None)
            assert (steps[1].output, steps[1].error) == (child_id, None)


async def test_step_timing(dbos: DBOS) -> None:
    """upstream: tests/test_workflow_introspection.py::test_step_timing (the real clock: a
    step's stamps are wall-clock epoch milliseconds)"""
    import time

    began = int(time.time() * 1000)

    @dbos.step()
    async def a_step() -> None:
        await trio.sleep(0.1)

    @dbos.workflow()
    async def a_workflow() -> None:
        for _ in range(3):
            await a_step()
        await dbos.set_event("key", "value")
        await dbos.list_workflows()
        await dbos.recv(timeout_seconds=0)

    async with dbos.launched():
        handle = await dbos.start_workflow(a_workflow)
        await handle.get_result()
        for step in await dbos.list_workflow_steps(handle.workflow_id):
            assert step.started_at_epoch_ms and step.completed_at_epoch_ms
            assert step.started_at_epoch_ms >= began
            assert step.completed_at_epoch_ms >= step.started_at_epoch_ms
            if step.function_id <= 3:
                assert step.completed_at_epoch_ms - step.started_at_epoch_ms >= 100


async def test_call_as_step_within_step(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_call_as_step_within_step"""

    @dbos.step()
    async def get_status(workflow_id: str) -> str:
        status = await dbos.get_workflow_status(workflow_id)
        assert status is not None
        return status.status

    @dbos.workflow()
    async def a_workflow() -> str:
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        return await get_status(workflow_id)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await a_workflow() == "PENDING"
        steps = await dbos.list_workflow_steps("wf")
        assert [s.function_name for s in steps] == [get_status.__qualname__]


async def test_list_workflow_completed_at(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow_completed_at"""
    release = trio.Event()

    @dbos.workflow()
    async def simple() -> None:
        return None

    @dbos.workflow()
    async def failing() -> None:
        raise Boom("boom")

    @dbos.workflow()
    async def pending() -> None:
        await release.wait()

    async with dbos.launched():
        await simple()
        [done] = await dbos.list_workflows(name=simple.__qualname__)
        assert done.status == "SUCCESS" and done.completed_at is not None
        assert done.created_at is not None and done.completed_at >= done.created_at
        with pytest.raises(Boom):
            await failing()
        [failed] = await dbos.list_workflows(name=failing.__qualname__)
        assert failed.status == "ERROR" and failed.completed_at is not None
        with SetWorkflowID("cancelled"):
            await dbos.start_workflow(pending)
        await dbos.cancel_workflow("cancelled")
        cancelled = await dbos.get_workflow_status("cancelled")
        assert cancelled is not None and cancelled.completed_at is not None
        with SetWorkflowID("running"):
            await dbos.start_workflow(pending)
        running = await dbos.get_workflow_status("running")
        assert running is not None and running.completed_at is None
        release.set()


def only_step(steps: list[StepInfo], name: str) -> StepInfo:
    found = [step for step in steps if step.function_name == name]
    assert len(found) == 1, f"expected one {name} step, got {len(found)}"
    return found[0]


def duration_ms(step: StepInfo) -> int:
    assert step.started_at_epoch_ms and step.completed_at_epoch_ms
    assert step.completed_at_epoch_ms >= step.started_at_epoch_ms
    return step.completed_at_epoch_ms - step.started_at_epoch_ms


async def test_list_workflow_end_times_positive(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_list_workflow_end_times_positive

    The bounds are read from the executor's clock (virtual here), as the rows' times are."""
    from datetime import UTC, datetime

    @dbos.workflow()
    async def simple() -> None:
        return None

    async def now() -> float:
        await trio.sleep(0.01)
        return await dbos.now()

    def iso(seconds: float) -> str:
        return datetime.fromtimestamp(seconds, UTC).isoformat()

    async with dbos.launched():
        start = await now()
        time_0, time_1 = iso(start - 40), iso(start - 20)
        await simple()
        time_2 = iso(await now())
        await trio.sleep(0.01)
        await simple()
        time_3 = iso(await now())
        assert await dbos.list_workflows(start_time=time_0, end_time=time_1) == []
        assert len(await dbos.list_workflows(start_time=time_1, end_time=time_2)) == 1
        assert len(await dbos.list_workflows(start_time=time_1, end_time=time_3)) == 2


async def test_callchild_last_sync(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_callchild_last_sync"""

    @dbos.step()
    async def step_one() -> None:
        return None

    @dbos.step()
    async def step_two() -> None:
        return None

    @dbos.workflow()
    async def child() -> None:
        return None

    @dbos.workflow()
    async def parent() -> None:
        await step_one()
        await step_two()
        await child()

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await parent()
        steps = await dbos.list_workflow_steps("wf")
        assert [s.function_name for s in steps] == [
            step_one.__qualname__,
            step_two.__qualname__,
            child.__qualname__,
            "DBOS.getResult",
        ]


async def test_callchild_rerun_sync(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_callchild_rerun_sync"""
    import uuid

    @dbos.workflow()
    async def child(value: str) -> str:
        return value

    @dbos.workflow()
    async def parent() -> str:
        child_id = str(uuid.uuid4())
        with SetWorkflowID(child_id):
            return await child(child_id)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            first = await parent()
        with SetWorkflowID("wf"):
            second = await parent()
        assert first == second


async def test_sleep_timing(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_sleep_timing"""

    @dbos.workflow()
    async def sleeper() -> None:
        await dbos.sleep(1.0)

    async with dbos.launched():
        handle = await dbos.start_workflow(sleeper)
        await handle.get_result()
        step = only_step(await dbos.list_workflow_steps(handle.workflow_id), "DBOS.sleep")
        assert duration_ms(step) >= 1000


async def test_recv_timeout_registration_is_instantaneous(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_workflow_introspection.py::test_recv_timeout_registration_is_instantaneous"""  # noqa: E501

    @dbos.workflow()
    async def receiver() -> Any:
        return await dbos.recv(timeout_seconds=60)

    async with dbos.launched():
        handle = await dbos.start_workflow(receiver)
        # Poll, so the floor is this wait and not the workflow's start.
        for _ in range(1000):
            steps = await dbos.list_workflow_steps(handle.workflow_id)
            if any(s.function_name == "DBOS.sleep" for s in steps):
                break
            await trio.sleep(0.01)
        waiting_since = trio.current_time()
        await trio.sleep(1.0)
        await dbos.send(handle.workflow_id, "msg")
        assert await handle.get_result() == "msg"
        waited_ms = int((trio.current_time() - waiting_since) * 1000)
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        # The durable timeout is recorded when the wait begins: it cannot span the wait.
        assert duration_ms(only_step(steps, "DBOS.sleep")) < waited_ms
        assert duration_ms(only_step(steps, "DBOS.recv")) >= 900


async def test_sleep_timing_unchanged_on_replay(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_workflow_introspection.py::test_sleep_timing_unchanged_on_replay"""
    from support.dbos_fixtures import reexecute

    runs = {"n": 0}

    @dbos.workflow()
    async def sleeper() -> None:
        runs["n"] += 1
        await dbos.sleep(1.0)

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await sleeper()
        before = only_step(await dbos.list_workflow_steps("wf"), "DBOS.sleep")
        await trio.sleep(5)
        await reexecute(dbos, dbos_url, sleeper, "wf")  # the body runs again, replaying
        assert runs["n"] == 2
        after = only_step(await dbos.list_workflow_steps("wf"), "DBOS.sleep")
        assert after.started_at_epoch_ms == before.started_at_epoch_ms
        assert after.completed_at_epoch_ms == before.completed_at_epoch_ms


async def test_get_result_timing_from_handle(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_get_result_timing_from_handle"""

    @dbos.workflow()
    async def child() -> str:
        await trio.sleep(0.5)  # work that takes time (not a durable sleep)
        return "c"

    @dbos.workflow()
    async def parent() -> None:
        handle = await dbos.start_workflow(child)
        await handle.get_result()

    async with dbos.launched():
        handle = await dbos.start_workflow(parent)
        await handle.get_result()
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert duration_ms(only_step(steps, "DBOS.getResult")) >= 400


async def test_child_workflow_row_timing(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_child_workflow_row_timing"""

    @dbos.workflow()
    async def child() -> str:
        await trio.sleep(0.5)
        return "c"

    @dbos.workflow()
    async def parent() -> None:
        await dbos.start_workflow(child)

    async with dbos.launched():
        handle = await dbos.start_workflow(parent)
        await handle.get_result()
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        # The child's start is bookkeeping: it does not absorb the child's runtime.
        assert duration_ms(only_step(steps, child.__qualname__)) < 400


async def test_get_result_timing_sync_child(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_get_result_timing_sync_child"""

    @dbos.workflow()
    async def child() -> str:
        await trio.sleep(0.5)
        return "c"

    @dbos.workflow()
    async def parent() -> None:
        await child()

    async with dbos.launched():
        handle = await dbos.start_workflow(parent)
        await handle.get_result()
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert duration_ms(only_step(steps, "DBOS.getResult")) >= 400


async def test_get_result_timing_enqueued_child(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_get_result_timing_enqueued_child"""
    queue = dbos.register_queue("timing-queue")

    @dbos.workflow()
    async def child() -> str:
        await trio.sleep(1.0)
        return "c"

    @dbos.workflow()
    async def parent() -> None:
        await (await queue.enqueue(child)).get_result()

    async with dbos.launched():
        handle = await dbos.start_workflow(parent)
        await handle.get_result()
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert duration_ms(only_step(steps, "DBOS.getResult")) >= 900
        assert duration_ms(only_step(steps, child.__qualname__)) < 900


async def test_get_result_timing_on_error(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_get_result_timing_on_error"""

    @dbos.workflow()
    async def child() -> None:
        await trio.sleep(1.0)
        raise Boom("boom")

    @dbos.workflow()
    async def parent() -> None:
        await (await dbos.start_workflow(child)).get_result()

    async with dbos.launched():
        handle = await dbos.start_workflow(parent)
        with pytest.raises(Boom):
            await handle.get_result()
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert duration_ms(only_step(steps, "DBOS.getResult")) >= 900


async def test_child_marker_timing_direct_call(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_workflow_introspection.py::test_child_marker_timing_direct_call"""

    @dbos.workflow()
    async def child() -> str:
        await trio.sleep(1.0)
        return "c"

    @dbos.workflow()
    async def parent() -> None:
        await child()

    async with dbos.launched():
        handle = await dbos.start_workflow(parent)
        await handle.get_result()
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert duration_ms(only_step(steps, child.__qualname__)) < 900


async def test_get_event_timeout_registration_is_instantaneous(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_workflow_introspection.py::test_get_event_timeout_registration_is_instantaneous"""  # noqa: E501
    getter_started = trio.Event()

    @dbos.workflow()
    async def setter() -> None:
        await trio.sleep(1.0)
        await dbos.set_event("k", "v")

    @dbos.workflow()
    async def getter(target: str) -> Any:
        getter_started.set()
        return await dbos.get_event(target, "k", timeout_seconds=60)

    async with dbos.launched():
        handle = await dbos.start_workflow(getter, "target")
        await getter_started.wait()
        with SetWorkflowID("target"):
            await dbos.start_workflow(setter)
        assert await handle.get_result() == "v"
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert duration_ms(only_step(steps, "DBOS.sleep")) < 900
        assert duration_ms(only_step(steps, "DBOS.getEvent")) >= 900
