"""Steps: checkpoints, retries, timeouts, threads, nesting and call-order step ids."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest
import trio
import trio.testing

from dbos_trio import (
    DBOS,
    DBOSException,
    DBOSMaxStepRetriesExceeded,
    DBOSStepTimeoutError,
    SetWorkflowID,
)
from dbos_trio._engine.workflows import step as step_module

from support.backends import count_rows, steps_of
from support.dbos_fixtures import reexecute

MakeDBOS = Callable[..., DBOS]


class Flaky(Exception):
    pass


class Fatal(Exception):
    pass


async def test_a_step_outside_a_workflow_is_a_plain_call_that_writes_nothing(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    seen: list[tuple[str | None, int | None]] = []

    @dbos.step()
    async def async_step(x: int) -> int:
        seen.append((dbos.workflow_id, dbos.step_id))
        return x + 1

    @dbos.step()
    def sync_step(x: int) -> int:
        seen.append((dbos.workflow_id, dbos.step_id))
        return x + 2

    assert await async_step(1) == 2  # before launch, too
    async with dbos.launched():
        assert await async_step(1) == 2
        assert await sync_step(1) == 3
    assert seen == [(None, None)] * 3
    assert await count_rows(dbos_url, "operation_outputs") == 0
    assert await count_rows(dbos_url, "workflow_status") == 0


async def test_a_step_inside_a_step_is_a_plain_call(make_dbos: MakeDBOS, dbos_url: str) -> None:
    dbos = make_dbos()
    seen: list[tuple[str, str | None, int | None]] = []

    @dbos.step()
    async def inner() -> str:
        seen.append(("inner", dbos.workflow_id, dbos.step_id))
        return "inner"

    @dbos.step()
    def sync_inner() -> str:
        seen.append(("sync inner", dbos.workflow_id, dbos.step_id))
        return "sync"

    @dbos.step()
    async def outer() -> str:
        seen.append(("outer", dbos.workflow_id, dbos.step_id))
        return await inner() + await sync_inner()

    @dbos.step()
    async def after() -> None:
        seen.append(("after", dbos.workflow_id, dbos.step_id))

    @dbos.workflow()
    async def nested() -> str:
        value = await outer()
        await after()
        return value

    async with dbos.launched():
        with SetWorkflowID("nested-1"):
            assert await nested() == "innersync"

    assert seen == [
        ("outer", "nested-1", 1),
        ("inner", "nested-1", 1),
        ("sync inner", "nested-1", 1),
        ("after", "nested-1", 2),
    ]
    assert await steps_of(dbos_url, "nested-1") == [
        (1, outer.__qualname__, None),
        (2, after.__qualname__, None),
    ]


async def test_steps_called_from_a_plain_def_step_return_their_values(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    seen: list[tuple[str, str | None, int | None]] = []

    @dbos.step()
    def sync_inner(x: int) -> int:
        seen.append(("sync inner", dbos.workflow_id, dbos.step_id))
        return x + 1

    @dbos.step()
    async def async_inner(x: int) -> int:
        seen.append(("async inner", dbos.workflow_id, dbos.step_id))
        return x * 10

    @dbos.step()
    def sync_outer(x: int) -> int:
        # In a worker thread: nested steps are plain calls that return values.
        return async_inner(sync_inner(x))  # type: ignore[no-any-return]

    @dbos.workflow()
    async def nested_in_thread() -> int:
        return await sync_outer(1)

    async with dbos.launched():
        with SetWorkflowID("thread-nest-1"):
            assert await nested_in_thread() == 20
        assert await sync_outer(2) == 30  # and outside a workflow

    assert seen[:2] == [("sync inner", "thread-nest-1", 1), ("async inner", "thread-nest-1", 1)]
    assert seen[2:] == [("sync inner", None, None), ("async inner", None, None)]
    assert await steps_of(dbos_url, "thread-nest-1") == [(1, sync_outer.__qualname__, None)]


async def test_sync_steps_run_in_a_worker_thread_and_see_the_workflow_id(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    trio_thread = threading.get_ident()
    seen: list[tuple[bool, str | None, int | None]] = []

    @dbos.step()
    def in_thread() -> int:
        seen.append((threading.get_ident() != trio_thread, dbos.workflow_id, dbos.step_id))
        return 7

    @dbos.step()
    async def in_task() -> int:
        seen.append((threading.get_ident() != trio_thread, dbos.workflow_id, dbos.step_id))
        return 8

    @dbos.workflow()
    async def mixed() -> int:
        return await in_thread() + await in_task()

    async with dbos.launched():
        with SetWorkflowID("mixed-1"):
            assert await mixed() == 15
    assert seen == [(True, "mixed-1", 1), (False, "mixed-1", 2)]


async def test_a_step_with_a_custom_name_is_recorded_under_that_name(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.step(name="charge-card")
    async def charge() -> int:
        return 42

    @dbos.workflow(name="checkout-flow")
    async def checkout() -> int:
        return await charge()

    async with dbos.launched():
        with SetWorkflowID("checkout-1"):
            assert await checkout() == 42
        status = await dbos.get_workflow_status("checkout-1")
    assert status is not None and status.name == "checkout-flow"
    assert await steps_of(dbos_url, "checkout-1") == [(1, "charge-card", None)]


async def test_retries_run_a_step_until_it_succeeds_with_exponential_backoff(
    make_dbos: MakeDBOS, dbos_url: str, autojump_clock: trio.testing.MockClock
) -> None:
    dbos = make_dbos()
    attempts: list[float] = []

    @dbos.step(retries_allowed=True, max_attempts=5, interval_seconds=1.5, backoff_rate=3.0)
    async def flaky() -> str:
        attempts.append(trio.current_time())
        if len(attempts) < 4:
            raise Flaky(f"attempt {len(attempts)}")
        return "ok"

    @dbos.workflow()
    async def retrying() -> str:
        return await flaky()

    async with dbos.launched():
        with SetWorkflowID("retrying-1"):
            assert await retrying() == "ok"
        steps = await dbos.list_workflow_steps("retrying-1")

    gaps = [round(b - a, 6) for a, b in pairwise(attempts)]
    assert gaps == [1.5, 4.5, 13.5]
    assert [(s.function_id, s.output, s.error) for s in steps] == [(1, "ok", None)]


class _RecordingTrio:
    """Stands in for the ``trio`` module inside ``dbos_trio._engine.workflows.step``: records the
    retry waits the step loop asks for, delegates everything else."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await trio.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(trio, name)


async def test_exhausted_retries_raise_max_step_retries_exceeded_with_every_error(
    make_dbos: MakeDBOS,
    dbos_url: str,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recording = _RecordingTrio()
    monkeypatch.setattr(step_module, "trio", recording)
    dbos = make_dbos()
    attempts: list[float] = []

    @dbos.step(retries_allowed=True, max_attempts=3, interval_seconds=2.0, backoff_rate=2.0)
    async def always_fails() -> None:
        attempts.append(trio.current_time())
        raise Flaky(f"failure {len(attempts)}")

    @dbos.workflow()
    async def doomed() -> None:
        await always_fails()

    async with dbos.launched():
        with SetWorkflowID("doomed-1"), pytest.raises(DBOSMaxStepRetriesExceeded) as raised:
            await doomed()
        # A later caller sees the same error, restored from the database.
        handle = await dbos.retrieve_workflow("doomed-1")
        with pytest.raises(DBOSMaxStepRetriesExceeded) as stored:
            await handle.get_result()

    error = raised.value
    assert error.dbos_error_code == 7
    assert str(error) == (
        f"DBOS Error 7: Step {always_fails.__qualname__} has exceeded its maximum of 3 retries"
    )
    assert [str(e) for e in error.errors] == ["failure 1", "failure 2", "failure 3"]
    assert all(isinstance(e, Flaky) for e in error.errors)
    assert len(attempts) == 3
    # Waits of 2 s and 4 s between attempts, and none (of 8 s) after the last one.
    assert recording.sleeps == [2.0, 4.0]
    assert [round(b - a, 6) for a, b in pairwise(attempts)] == [2.0, 4.0]
    assert str(stored.value) == str(error)
    assert [str(e) for e in stored.value.errors] == ["failure 1", "failure 2", "failure 3"]


async def test_should_retry_returning_false_stops_at_once_with_the_original_error(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    attempts = {"fatal": 0, "mixed": 0}

    def retry_unless_fatal(error: BaseException) -> bool:
        return not isinstance(error, Fatal)

    @dbos.step(
        retries_allowed=True, max_attempts=4, interval_seconds=0, should_retry=retry_unless_fatal
    )
    async def fatal() -> None:
        attempts["fatal"] += 1
        raise Fatal("no retry")

    @dbos.step(
        retries_allowed=True, max_attempts=3, interval_seconds=0, should_retry=retry_unless_fatal
    )
    async def mixed() -> None:
        attempts["mixed"] += 1
        if attempts["mixed"] < 3:
            raise Flaky("retry me")
        raise Fatal("stop on the last attempt")

    @dbos.workflow()
    async def run(which: str) -> None:
        await (fatal() if which == "fatal" else mixed())

    async with dbos.launched():
        with SetWorkflowID("fatal-1"), pytest.raises(Fatal, match="no retry"):
            await run("fatal")
        with SetWorkflowID("mixed-1"), pytest.raises(Fatal, match="stop on the last"):
            await run("mixed")
        steps = await dbos.list_workflow_steps("fatal-1")

    assert attempts == {"fatal": 1, "mixed": 3}
    assert len(steps) == 1 and isinstance(steps[0].error, Fatal)


async def test_without_retries_allowed_a_failing_step_runs_once(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()
    attempts = {"n": 0}

    @dbos.step(max_attempts=5)
    async def once() -> None:
        attempts["n"] += 1
        raise Flaky("once")

    @dbos.workflow()
    async def run() -> None:
        await once()

    async with dbos.launched():
        with pytest.raises(Flaky, match="once"):
            await run()
    assert attempts["n"] == 1


async def test_a_step_timeout_raises_step_timeout_error_and_the_attempt_records_nothing(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    progress: list[str] = []

    @dbos.step()
    async def recorder() -> str:
        progress.append("recorder ran")
        return "recorded"

    @dbos.step(timeout_seconds=0.2)
    async def slow() -> str:
        progress.append("slow started")
        try:
            await trio.sleep(30)
            # Would be a nested (plain) call and a value: must never happen.
            progress.append(await recorder())
            return "too late"
        finally:
            progress.append("slow cleaned up")

    @dbos.workflow()
    async def bounded() -> str:
        try:
            return await slow()
        except DBOSStepTimeoutError as error:
            return f"timed out after {error.timeout_seconds}"

    async with dbos.launched():
        with trio.fail_after(10), SetWorkflowID("bounded-1"):
            assert await bounded() == "timed out after 0.2"
        steps = await dbos.list_workflow_steps("bounded-1")
        # Replay returns the recorded timeout without running the body again.
        assert await reexecute(dbos, dbos_url, bounded, "bounded-1") == "timed out after 0.2"

    assert progress == ["slow started", "slow cleaned up"]
    assert len(steps) == 1
    assert steps[0].function_name == slow.__qualname__
    assert steps[0].output is None
    assert isinstance(steps[0].error, DBOSStepTimeoutError)
    assert steps[0].error.dbos_error_code == 18
    assert steps[0].error.timeout_seconds == 0.2


async def test_a_step_timeout_is_a_fresh_deadline_for_each_retry(
    make_dbos: MakeDBOS, autojump_clock: trio.testing.MockClock
) -> None:
    dbos = make_dbos()
    attempts: list[float] = []

    @dbos.step(timeout_seconds=5, retries_allowed=True, max_attempts=3, interval_seconds=1)
    async def slow_then_fast() -> str:
        attempts.append(trio.current_time())
        if len(attempts) < 3:
            await trio.sleep(60)
        return "fast"

    @dbos.workflow()
    async def run() -> str:
        return await slow_then_fast()

    async with dbos.launched():
        assert await run() == "fast"
    assert [round(b - a, 6) for a, b in pairwise(attempts)] == [6.0, 7.0]


async def test_step_options_are_validated_at_decoration(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    def sync_body() -> None:
        return None

    with pytest.raises(DBOSException, match="timeout_seconds"):
        dbos.step(timeout_seconds=1.0)(sync_body)
    with pytest.raises(DBOSException, match="timeout_seconds"):
        dbos.step(timeout_seconds=0)
    with pytest.raises(DBOSException, match="max_attempts"):
        dbos.step(max_attempts=0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
async def test_concurrent_steps_get_ids_in_call_order_whatever_order_they_finish(
    make_dbos: MakeDBOS, dbos_url: str, seed: int
) -> None:
    dbos = make_dbos()
    rng = random.Random(seed)
    count = 8
    # Each step first sleeps a random while (so Trio interleaves them differently per
    # seed), then waits for the step called after it: they finish in reverse call order.
    delays = [rng.uniform(0.0, 0.02) for _ in range(count)]
    done = [trio.Event() for _ in range(count + 1)]
    done[count].set()
    finished: list[int] = []

    @dbos.step()
    async def tagged(index: int, delay: float) -> int:
        await trio.sleep(delay)
        await done[index + 1].wait()
        finished.append(index)
        done[index].set()
        return index

    @dbos.step()
    def sync_tagged(index: int) -> int:
        return index

    @dbos.workflow()
    async def fan_out() -> int:
        async with trio.open_nursery() as nursery:
            for index in range(count):
                # Trio starts these tasks in an order of its choosing; the ids follow the
                # calls, which start_soon makes right here, in loop order.
                nursery.start_soon(tagged, index, delays[index])
        return await sync_tagged(count)

    workflow_id = f"fan-out-{seed}"
    async with dbos.launched():
        with SetWorkflowID(workflow_id), trio.fail_after(10):
            assert await fan_out() == count
        steps = await dbos.list_workflow_steps(workflow_id)
        finished_first_run = list(finished)
        # A replay sees the same ids, whatever the new schedule, and runs no step body.
        rng.shuffle(delays)
        assert await reexecute(dbos, dbos_url, fan_out, workflow_id) == count

    assert finished_first_run == list(reversed(range(count)))
    assert [(s.function_id, s.output) for s in steps] == [(i + 1, i) for i in range(count + 1)]
    assert [s.function_name for s in steps[:count]] == [tagged.__qualname__] * count
    assert finished == finished_first_run  # the replay ran no step body
