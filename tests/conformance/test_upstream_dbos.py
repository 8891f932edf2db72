"""Port of the official SDK's ``tests/test_dbos.py``: workflows, steps, children,
messages, events, sleep, timeouts and handles, observed through dbos_trio's API."""

from __future__ import annotations

import logging

import pytest
import trio
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    DBOSAwaitedWorkflowCancelledError,
    DBOSException,
    SendMessage,
    SetWorkflowID,
    SetWorkflowTimeout,
)


async def test_simple_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_simple_workflow"""
    counts = {"wf": 0, "step": 0}

    @dbos.step()
    async def a_step(value: str) -> str:
        assert dbos.step_id == 1
        counts["step"] += 1
        return value

    @dbos.workflow()
    async def a_workflow(first: str, second: str) -> str:
        counts["wf"] += 1
        return await a_step(first) + second

    async with dbos.launched():
        assert await a_workflow("bob", "1") == "bob1"
        with SetWorkflowID("fixed"):
            assert await a_workflow("alice", "2") == "alice2"
        with SetWorkflowID("fixed"):
            assert await a_workflow("alice", "2") == "alice2"
        assert counts == {"wf": 2, "step": 2}
        with SetWorkflowID("fixed"):
            handle = await dbos.start_workflow(a_workflow, "alice", "2")
        assert await handle.get_result() == "alice2"
        assert counts["wf"] == 2


async def test_simple_workflow_attempts_counter(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_simple_workflow_attempts_counter"""

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        for _ in range(5):
            with SetWorkflowID("counted"):
                await noop()
            status = await dbos.get_workflow_status("counted")
            assert status is not None
            assert status.recovery_attempts == 1
            assert status.updated_at is not None and status.created_at is not None
            assert status.updated_at >= status.created_at


async def test_child_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_child_workflow"""

    @dbos.workflow()
    async def child(value: str) -> str:
        return value + "_child"

    @dbos.workflow()
    async def parent() -> tuple[str, str, str]:
        parent_id = dbos.workflow_id
        assert parent_id is not None
        called = await child("test")
        handle = await dbos.start_workflow(child, "async")
        return parent_id, handle.workflow_id, called + await handle.get_result()

    async with dbos.launched():
        handle = await dbos.start_workflow(parent)
        parent_id, started_id, result = await handle.get_result()
        assert result == "test_childasync_child"
        assert (await handle.get_status()).parent_workflow_id is None
        called_child = await dbos.get_workflow_status(f"{parent_id}-1")
        assert called_child is not None and called_child.parent_workflow_id == parent_id
        started_child = await dbos.get_workflow_status(started_id)
        assert started_child is not None and started_child.parent_workflow_id == parent_id


async def test_child_workflow_assigned_id(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_child_workflow_assigned_id"""

    @dbos.workflow()
    async def child() -> str:
        assert dbos.workflow_id == "my-child"
        return "child"

    @dbos.workflow()
    async def parent() -> str:
        with SetWorkflowID("my-child"):
            return await child()

    async with dbos.launched():
        assert await parent() == "child"
        status = await dbos.get_workflow_status("my-child")
        assert status is not None and status.status == "SUCCESS"


async def test_exception_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_exception_workflow"""
    runs = {"step": 0}

    @dbos.step()
    async def failing_step() -> None:
        runs["step"] += 1
        raise ValueError("step failed")

    @dbos.workflow()
    async def a_workflow() -> None:
        await failing_step()

    async with dbos.launched():
        with SetWorkflowID("bad"), pytest.raises(ValueError, match="step failed"):
            await a_workflow()
        # Running the same id again returns the recorded error, without a new attempt.
        with SetWorkflowID("bad"), pytest.raises(ValueError, match="step failed"):
            await a_workflow()
        assert runs["step"] == 1
        handle = await dbos.retrieve_workflow("bad")
        assert (await handle.get_status()).status == "ERROR"
        with pytest.raises(ValueError, match="step failed"):
            await handle.get_result()


async def test_temp_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_temp_workflow (a step called outside a workflow)"""

    @dbos.step()
    async def a_step(value: str) -> str:
        assert dbos.workflow_id is None
        return value

    async with dbos.launched():
        assert await a_step("var") == "var"
        # A step outside a workflow is a plain call: no workflow row (see DEVIATIONS.md).
        assert await dbos.list_workflows() == []


async def test_recovery_workflow(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_recovery_workflow (a launch recovers PENDING work)"""
    from dbos_trio import Config

    def app() -> tuple[DBOS, object]:
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="v1"))

        @instance.workflow(name="recovered")
        async def recovered(value: str) -> str:
            await instance.sleep(10)
            return value + "-done"

        return instance, recovered

    first, wf = app()
    async with first.launched():
        with SetWorkflowID("to-recover"):
            await first.start_workflow(wf, "x")  # type: ignore[arg-type]
        await trio.sleep(1)
    second, _ = app()
    async with second.launched():
        handle = await second.retrieve_workflow("to-recover")
        assert await handle.get_result() == "x-done"
        status = await handle.get_status()
        assert status.recovery_attempts == 2


async def test_workflow_returns_none(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_workflow_returns_none"""

    @dbos.workflow()
    async def nothing() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("none"):
            assert await nothing() is None
        handle = await dbos.retrieve_workflow("none")
        assert await handle.get_result() is None
        assert (await handle.get_status()).status == "SUCCESS"


async def test_start_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_start_workflow"""

    @dbos.workflow()
    async def a_workflow(value: str) -> str:
        return value * 2

    async with dbos.launched():
        with SetWorkflowID("started"):
            handle = await dbos.start_workflow(a_workflow, "ab")
        assert handle.workflow_id == "started"
        assert await handle.get_result() == "abab"
        assert (await handle.get_status()).status == "SUCCESS"


async def test_retrieve_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_retrieve_workflow"""
    from dbos_trio import DBOSNonExistentWorkflowError

    @dbos.workflow()
    async def sleeper(seconds: float) -> float:
        await dbos.sleep(seconds)
        return seconds

    async with dbos.launched():
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.retrieve_workflow("missing")
        with SetWorkflowID("sleeper"):
            await dbos.start_workflow(sleeper, 2.0)
        handle = await dbos.retrieve_workflow("sleeper")
        assert (await handle.get_status()).status == "PENDING"
        assert await handle.get_result() == 2.0
        assert (await handle.get_status()).status == "SUCCESS"


async def test_retrieve_workflow_in_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_retrieve_workflow_in_workflow"""

    @dbos.workflow()
    async def child() -> str:
        return "child"

    @dbos.workflow()
    async def parent() -> str:
        handle = await dbos.start_workflow(child)
        again = await dbos.retrieve_workflow(handle.workflow_id)
        status = await again.get_status()
        return f"{await again.get_result()}-{status.name == child.__qualname__}"

    async with dbos.launched():
        assert await parent() == "child-True"


async def test_sleep(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_sleep (a recorded sleep is not slept again)"""

    @dbos.workflow()
    async def sleeper(seconds: float) -> float:
        await dbos.sleep(seconds)
        return trio.current_time()

    async with dbos.launched():
        began = trio.current_time()
        with SetWorkflowID("sleep"):
            ended = await sleeper(60)
        assert ended - began >= 60
        replay_began = trio.current_time()
        with SetWorkflowID("sleep"):
            await sleeper(60)  # the recorded result: no sleep at all
        assert trio.current_time() - replay_began < 60


async def test_send_recv(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_send_recv"""

    @dbos.workflow()
    async def receiver(topic: str) -> str:
        first = await dbos.recv(topic, timeout_seconds=10)
        second = await dbos.recv(topic, timeout_seconds=10)
        third = await dbos.recv(topic, timeout_seconds=1)  # nothing left: None
        return f"{first}-{second}-{third}"

    @dbos.workflow()
    async def sender(dest: str, topic: str) -> str:
        await dbos.send(dest, "a", topic)
        await dbos.send(dest, "b", topic)
        return dest

    async with dbos.launched():
        with SetWorkflowID("dest"):
            handle = await dbos.start_workflow(receiver, "t")
        assert await sender("dest", "t") == "dest"
        assert await handle.get_result() == "a-b-None"
        # Sending to a workflow that does not exist fails.
        with pytest.raises(DBOSException, match="Non-existent"):
            await dbos.send("nowhere", "x", "t")


async def test_send_recv_temp_wf(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_send_recv_temp_wf (send from outside a workflow)"""

    @dbos.workflow()
    async def receiver() -> str:
        return str(await dbos.recv("t", timeout_seconds=10))

    async with dbos.launched():
        with SetWorkflowID("dest"):
            handle = await dbos.start_workflow(receiver)
        await dbos.send("dest", "hello", "t")
        assert await handle.get_result() == "hello"


async def test_send_idempotency_key(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_send_idempotency_key"""
    first_received = trio.Event()

    @dbos.workflow()
    async def receive_two() -> str:
        first = await dbos.recv(timeout_seconds=10)
        first_received.set()
        second = await dbos.recv(timeout_seconds=2)
        return f"{first}-{second}"

    async with dbos.launched():
        with SetWorkflowID("dest"):
            handle = await dbos.start_workflow(receive_two)
        await dbos.send("dest", "hello", idempotency_key="k")
        await first_received.wait()
        await dbos.send("dest", "hello-again", idempotency_key="k")
        assert await handle.get_result() == "hello-None"


async def test_send_bulk(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_send_bulk"""

    @dbos.workflow()
    async def receive_three() -> str:
        one = await dbos.recv("t", timeout_seconds=10)
        two = await dbos.recv("t", timeout_seconds=10)
        three = await dbos.recv(timeout_seconds=10)
        return f"{one}-{two}-{three}"

    @dbos.workflow()
    async def receive_one() -> str:
        return str(await dbos.recv(timeout_seconds=10))

    async with dbos.launched():
        with SetWorkflowID("three"):
            three = await dbos.start_workflow(receive_three)
        await dbos.send_bulk(
            [
                SendMessage("three", "a", "t"),
                SendMessage("three", "b", "t"),
                SendMessage("three", "c"),
            ]
        )
        assert await three.get_result() == "a-b-c"

        with SetWorkflowID("real"):
            real = await dbos.start_workflow(receive_one)
        with pytest.raises(DBOSException, match="Non-existent `send` destination"):
            await dbos.send_bulk([SendMessage("real", "lost"), SendMessage("fake", "lost")])
        assert await real.get_result() == "None"  # all or nothing


async def test_send_bulk_duplicate_key_within_batch(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_send_bulk_duplicate_key_within_batch"""

    @dbos.workflow()
    async def receive_one() -> str:
        return str(await dbos.recv(timeout_seconds=3))

    async with dbos.launched():
        with SetWorkflowID("dest"):
            handle = await dbos.start_workflow(receive_one)
        batch = [
            SendMessage("dest", "first", idempotency_key="dup"),
            SendMessage("dest", "second", idempotency_key="dup"),
        ]
        with pytest.raises(DBOSException, match="duplicate idempotency keys") as raised:
            await dbos.send_bulk(batch)
        assert "dup" in str(raised.value)
        assert await handle.get_result() == "None"


async def test_send_bulk_empty(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_send_bulk_empty"""

    @dbos.workflow()
    async def send_nothing() -> str:
        await dbos.send_bulk([])
        return "ok"

    async with dbos.launched():
        await dbos.send_bulk([])
        assert await send_nothing() == "ok"


async def test_set_get_events(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_set_get_events"""

    @dbos.step()
    async def set_in_step(value: str) -> None:
        await dbos.set_event("step-key", value)

    @dbos.workflow()
    async def setter() -> None:
        await dbos.set_event("key1", "value1")
        await set_in_step("value2")

    @dbos.workflow()
    async def getter(workflow_id: str) -> str:
        one = await dbos.get_event(workflow_id, "key1")
        two = await dbos.get_event(workflow_id, "step-key")
        missing = await dbos.get_event(workflow_id, "missing", timeout_seconds=1)
        return f"{one}-{two}-{missing}"

    async with dbos.launched():
        with SetWorkflowID("setter"):
            await setter()
        assert await dbos.get_event("setter", "key1") == "value1"
        assert await dbos.get_event("setter", "step-key") == "value2"
        with SetWorkflowID("getter"):
            assert await getter("setter") == "value1-value2-None"
        with SetWorkflowID("getter"):  # replayed from its checkpoints
            assert await getter("setter") == "value1-value2-None"
        assert await dbos.get_event("setter", "missing", timeout_seconds=0) is None


async def test_nonserializable_values(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_nonserializable_values"""

    @dbos.step()
    async def bad_step() -> object:
        return lambda: None

    @dbos.workflow()
    async def returns_bad() -> object:
        return await bad_step()

    async with dbos.launched():
        with pytest.raises(TypeError):
            await returns_bad()


async def test_multi_set_event(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_multi_set_event"""
    proceed = trio.Event()

    @dbos.step()
    async def set_in_step(value: str) -> None:
        await dbos.set_event("step", value)

    @dbos.workflow()
    async def setter() -> None:
        await dbos.set_event("wf", "value1")
        await set_in_step("value1")
        await proceed.wait()
        await dbos.set_event("wf", "value2")
        await set_in_step("value2")

    async with dbos.launched():
        with SetWorkflowID("setter"):
            handle = await dbos.start_workflow(setter)
        assert await dbos.get_event("setter", "wf") == "value1"
        assert await dbos.get_event("setter", "step") == "value1"
        proceed.set()
        assert await handle.get_result() is None
        assert await dbos.get_event("setter", "wf") == "value2"
        assert await dbos.get_all_events("setter") == {"wf": "value2", "step": "value2"}


async def test_duplicate_registration(dbos: DBOS, caplog: pytest.LogCaptureFixture) -> None:
    """upstream: tests/test_dbos.py::test_duplicate_registration (a warning, the last wins)"""
    caplog.set_level(logging.WARNING)

    @dbos.step()
    async def my_step() -> str:
        return "first"

    @dbos.step()  # type: ignore[no-redef]
    async def my_step() -> str:  # noqa: F811
        return "second"

    @dbos.workflow()
    async def my_workflow() -> str:
        return "first"

    @dbos.workflow()  # type: ignore[no-redef]
    async def my_workflow() -> str:  # noqa: F811
        return await my_step()

    assert "Duplicate registration of function" in caplog.text
    assert "test_duplicate_registration.<locals>.my_workflow" in caplog.text
    async with dbos.launched():
        assert await my_workflow() == "second"


async def test_app_version(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_app_version (a configured version is stored)"""
    from dbos_trio import Config

    dbos = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="1.2.3"))

    @dbos.workflow()
    async def a_workflow() -> str:
        return "ok"

    async with dbos.launched():
        assert dbos.app_version == "1.2.3"
        with SetWorkflowID("versioned"):
            await a_workflow()
        status = await dbos.get_workflow_status("versioned")
        assert status is not None and status.app_version == "1.2.3"


async def test_workflow_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_workflow_timeout"""

    @dbos.workflow()
    async def slow() -> None:
        for _ in range(100):
            await dbos.sleep(1)

    @dbos.workflow()
    async def parent() -> None:
        await slow()

    async with dbos.launched():
        with SetWorkflowTimeout(0.1), SetWorkflowID("slow"):
            handle = await dbos.start_workflow(slow)
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        assert (await handle.get_status()).status == "CANCELLED"

        # The deadline reaches children.
        with SetWorkflowTimeout(0.1), SetWorkflowID("parent"):
            handle = await dbos.start_workflow(parent)
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        child = await dbos.get_workflow_status("parent-1")
        assert child is not None and child.status == "CANCELLED"


async def test_custom_names(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_custom_names"""

    @dbos.step(name="custom-step")
    async def a_step() -> str:
        return "step"

    @dbos.workflow(name="custom-workflow")
    async def a_workflow() -> str:
        return await a_step()

    async with dbos.launched():
        with SetWorkflowID("named"):
            await a_workflow()
        status = await dbos.get_workflow_status("named")
        assert status is not None and status.name == "custom-workflow"
        steps = await dbos.list_workflow_steps("named")
        assert [s.function_name for s in steps] == ["custom-step"]


async def test_step_without_dbos(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_step_without_dbos (a step before launch)"""

    @dbos.step()
    async def a_step(value: int) -> int:
        assert dbos.workflow_id is None
        return value + 1

    assert await a_step(1) == 2


async def test_nested_steps(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_nested_steps"""

    @dbos.step()
    async def inner() -> str:
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        return workflow_id

    @dbos.step()
    async def outer() -> str:
        return await inner()

    @dbos.workflow()
    async def a_workflow() -> str:
        return await outer()

    async with dbos.launched():
        with SetWorkflowID("nested"):
            assert await a_workflow() == "nested"
        steps = await dbos.list_workflow_steps("nested")
        assert [s.function_name for s in steps] == [outer.__qualname__]


async def test_get_events(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_get_events"""

    @dbos.workflow()
    async def setter() -> str:
        await dbos.set_event("event1", "bad")
        await dbos.set_event("event1", "value1")
        await dbos.set_event("event2", {"nested": "data", "count": 42})
        await dbos.set_event("event3", [1, 2, 3])
        return "done"

    @dbos.workflow()
    async def reader(workflow_id: str) -> int:
        return len(await dbos.get_all_events(workflow_id))

    @dbos.workflow()
    async def silent() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("setter"):
            await setter()
        assert await dbos.get_all_events("setter") == {
            "event1": "value1",
            "event2": {"nested": "data", "count": 42},
            "event3": [1, 2, 3],
        }
        with SetWorkflowID("reader"):
            assert await reader("setter") == 3
        steps = await dbos.list_workflow_steps("reader")
        assert [s.function_name for s in steps] == ["DBOS.get_events"]
        with SetWorkflowID("silent"):
            await silent()
        assert await dbos.get_all_events("silent") == {}


async def test_run_step(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_run_step (and test_run_step_async)"""

    async def plain(value: str, expected_id: int) -> str:
        assert dbos.step_id == expected_id
        return value

    @dbos.workflow()
    async def a_workflow(one: str, two: str) -> str:
        return await dbos.run_step(plain, one, 1) + await dbos.run_step(
            plain, two, 2, name="test_step"
        )

    async with dbos.launched():
        with SetWorkflowID("run-step"):
            assert await a_workflow("bob", "joe") == "bobjoe"
        steps = await dbos.list_workflow_steps("run-step")
        assert [s.function_name for s in steps] == [plain.__qualname__, "test_step"]


async def test_wait_first(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_wait_first"""

    @dbos.workflow()
    async def sleeper(seconds: float) -> float:
        await dbos.sleep(seconds)
        return seconds

    async with dbos.launched():
        handles = [await dbos.start_workflow(sleeper, s) for s in (30.0, 5.0, 20.0)]
        first = await dbos.wait_first(handles)
        assert first.workflow_id == handles[1].workflow_id
        assert await first.get_result() == 5.0


async def test_wait_first_empty(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_wait_first_empty"""
    async with dbos.launched():
        with pytest.raises(ValueError, match="must not be empty"):
            await dbos.wait_first([])


async def test_get_event_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_get_event_timeout"""

    @dbos.workflow()
    async def quiet() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("quiet"):
            await quiet()
        began = trio.current_time()
        assert await dbos.get_event("quiet", "missing", timeout_seconds=5) is None
        assert await dbos.get_event("nonexistent", "missing", timeout_seconds=5) is None
        assert trio.current_time() - began >= 5


async def test_recv_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_recv_timeout"""

    @dbos.workflow()
    async def waits(seconds: float) -> object:
        return await dbos.recv("t", timeout_seconds=seconds)

    async with dbos.launched():
        began = trio.current_time()
        assert await waits(5.0) is None
        assert trio.current_time() - began >= 5


async def test_eid_reset(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_eid_reset (a re-run after a reset replays the step)"""
    runs = {"step": 0}

    @dbos.step()
    async def a_step() -> str:
        runs["step"] += 1
        return "hello"

    @dbos.workflow()
    async def a_workflow() -> str:
        await dbos.set_event("started", 1)
        await dbos.recv("run_step")
        return await a_step()

    async with dbos.launched():
        with SetWorkflowID("eid"):
            handle = await dbos.start_workflow(a_workflow)
        assert await dbos.get_event("eid", "started") == 1
        await dbos.send("eid", "go", "run_step")
        assert await handle.get_result() == "hello"
        with SetWorkflowID("eid"):
            assert await a_workflow() == "hello"
        assert runs["step"] == 1


async def test_send_bulk_from_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_send_bulk_from_workflow"""
    sends = {"n": 0}

    @dbos.workflow()
    async def receive_two() -> str:
        first = await dbos.recv(timeout_seconds=10)
        second = await dbos.recv(timeout_seconds=10)
        return f"{first}-{second}"

    @dbos.workflow()
    async def send_both(dest: str) -> None:
        sends["n"] += 1
        await dbos.send_bulk([SendMessage(dest, "one"), SendMessage(dest, "two")])

    async with dbos.launched():
        with SetWorkflowID("dest"):
            handle = await dbos.start_workflow(receive_two)
        with SetWorkflowID("sender"):
            await send_both("dest")
        assert await handle.get_result() == "one-two"
        with SetWorkflowID("sender"):
            await send_both("dest")
        assert sends["n"] == 1


async def test_recovery_workflow_step(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_recovery_workflow_step (a recorded step is skipped)"""
    from dbos_trio import Config

    from support.backends import execute

    counts = {"wf": 0, "step": 0}

    def app() -> tuple[DBOS, object]:
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="v1"))

        @instance.step(name="test_step")
        async def test_step(value: str) -> None:
            counts["step"] += 1

        @instance.workflow(name="test_workflow")
        async def test_workflow(one: str, two: str) -> str:
            counts["wf"] += 1
            assert await test_step(two) is None
            return one

        return instance, test_workflow

    first, workflow = app()
    async with first.launched():
        with SetWorkflowID("wf"):
            assert await workflow("bob", "bob") == "bob"  # type: ignore[operator]
    await execute(
        dbos_url, "UPDATE {t}workflow_status SET status = 'PENDING' WHERE workflow_uuid = %s", "wf"
    )
    second, _ = app()
    async with second.launched():
        handle = await second.retrieve_workflow("wf")
        assert await handle.get_result() == "bob"
        assert (await handle.get_status()).recovery_attempts == 2
    assert counts == {"wf": 2, "step": 1}


async def test_send_bulk_send_to_forks(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_send_bulk_send_to_forks"""
    from support.backends import query

    @dbos.step()
    async def step_a() -> int:
        return 1

    @dbos.workflow()
    async def forkable() -> int:
        return await step_a()

    async def fork(workflow_id: str) -> str:
        handle = await dbos.fork_workflow(workflow_id, 1)
        assert await handle.get_result() == 1
        assert (await handle.get_status()).forked_from == workflow_id
        return handle.workflow_id

    async with dbos.launched():
        for root in ("a", "b", "c"):
            with SetWorkflowID(root):
                await forkable()
        a_fork = await fork("a")
        a_fork_fork = await fork(a_fork)
        b_fork = await fork("b")
        c_fork = await fork("c")
        await dbos.send_bulk(
            [SendMessage("a", "to_a", idempotency_key="k"), SendMessage("b", "to_b")],
            send_to_forks=True,
        )
        url = dbos.config.database_url
        assert url is not None
        rows = await query(url, "SELECT destination_uuid FROM {t}notifications")
        destinations = {row[0] for row in rows}
        assert {"a", a_fork, a_fork_fork, "b", b_fork} <= destinations
        assert "c" not in destinations and c_fork not in destinations
        before = len(rows)
        await dbos.send_bulk([SendMessage("a", "x", idempotency_key="k")], send_to_forks=True)
        assert len(await query(url, "SELECT destination_uuid FROM {t}notifications")) == before


async def test_recovery_appversion(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_dbos.py::test_recovery_appversion

    Another executor's PENDING workflow is recovered by an executor running its
    application version, and not by one whose code (so whose derived version) changed.
    Upstream calls its private ``_recover_pending_workflows``; here the public
    ``recover_executor`` of the version the recovering executor runs."""
    from dbos_trio import Config

    from support.backends import execute

    def app(executor_id: str, *, changed: bool = False) -> tuple[DBOS, object]:
        # No app_version: it is derived from the registered workflows' source.
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, executor_id=executor_id))
        if changed:

            @instance.workflow(name="test_workflow")
            async def test_workflow(x: int) -> int:
                return x + 1

        else:

            @instance.workflow(name="test_workflow")
            async def test_workflow(x: int) -> int:
                return x

        return instance, test_workflow

    async def back_to_pending() -> None:
        # As if "testexecutor" died while running it (and long enough ago to be judged).
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'PENDING', executor_id = 'testexecutor', "
            "updated_at = 0, output = NULL WHERE workflow_uuid = %s",
            "wf",
        )

    first, workflow = app("testexecutor")
    async with first.launched():
        with SetWorkflowID("wf"):
            assert await workflow(5) == 5  # type: ignore[operator]
        original_version = first.app_version
    await back_to_pending()

    second, _ = app("testexecutor_another")
    async with second.launched():
        assert second.app_version == original_version  # the same code, the same version
        moved = await second.recover_executor("testexecutor", application_version=original_version)
        assert moved == ["wf"]
        assert await (await second.retrieve_workflow("wf")).get_result() == 5
    await back_to_pending()

    third, _ = app("testexecutor_another", changed=True)
    async with third.launched():
        assert third.app_version != original_version
        assert (
            await third.recover_executor("testexecutor", application_version=third.app_version)
            == []
        )
        await trio.sleep(5)
        status = await third.get_workflow_status("wf")
        assert status is not None and status.status == "PENDING"
        assert status.app_version == original_version
