"""Port of the official SDK's ``tests/test_failures.py``: step retries, ``should_retry``,
``step_status``, recovery limits (the dead-letter state), error pickling and step
timeouts."""

from __future__ import annotations

import contextlib
import math
import pickle

import pytest
import trio
import trio.lowlevel
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    Config,
    DBOSAwaitedWorkflowCancelledError,
    DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded,
    DBOSException,
    DBOSMaxStepRetriesExceeded,
    DBOSQueueDeduplicatedError,
    DBOSStepTimeoutError,
    SetWorkflowID,
)

from support.backends import execute


class FatalError(Exception):
    pass


class RetryableError(Exception):
    pass


async def test_step_retries(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_retries"""
    queue = dbos.register_queue("test-queue")
    calls = {"n": 0}

    @dbos.step(retries_allowed=True, interval_seconds=0, max_attempts=2)
    async def failing_step() -> None:
        calls["n"] += 1
        raise RetryableError("fail")

    @dbos.workflow()
    async def failing_workflow() -> None:
        await failing_step()

    message = f"Step {failing_step.__qualname__} has exceeded its maximum of 2 retries"
    async with dbos.launched():
        with pytest.raises(Exception, match="fail"):
            await failing_step()  # outside a workflow: a plain call, no retries
        calls["n"] = 0
        with pytest.raises(DBOSMaxStepRetriesExceeded) as raised:
            await failing_workflow()
        assert message in str(raised.value)
        assert calls["n"] == 2
        assert len(raised.value.errors) == 2
        assert all("fail" in str(error) for error in raised.value.errors)
        calls["n"] = 0
        handle = await queue.enqueue(failing_workflow)
        with pytest.raises(DBOSMaxStepRetriesExceeded) as raised:
            await handle.get_result()
        assert message in str(raised.value)
        assert calls["n"] == 2


async def test_step_retries_no_final_sleep(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_retries_no_final_sleep"""

    @dbos.step(retries_allowed=True, interval_seconds=100, backoff_rate=1, max_attempts=3)
    async def failing_step() -> None:
        raise RetryableError("fail")

    @dbos.workflow()
    async def failing_workflow() -> None:
        await failing_step()

    async with dbos.launched():
        began = trio.current_time()
        with pytest.raises(DBOSMaxStepRetriesExceeded):
            await failing_workflow()
        # Two waits between three attempts; none after the last one.
        assert 200 <= trio.current_time() - began < 300


async def test_step_should_retry(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_should_retry"""
    calls = {"fatal": 0, "retryable": 0}

    def retry_unless_fatal(error: BaseException) -> bool:
        return not isinstance(error, FatalError)

    @dbos.step(
        retries_allowed=True, interval_seconds=0, max_attempts=4, should_retry=retry_unless_fatal
    )
    async def fatal_step() -> None:
        calls["fatal"] += 1
        raise FatalError("no retry")

    @dbos.step(
        retries_allowed=True, interval_seconds=0, max_attempts=4, should_retry=retry_unless_fatal
    )
    async def retryable_step() -> None:
        calls["retryable"] += 1
        raise RetryableError("retry")

    @dbos.workflow()
    async def fatal_workflow() -> None:
        await fatal_step()

    @dbos.workflow()
    async def retryable_workflow() -> None:
        await retryable_step()

    async with dbos.launched():
        with pytest.raises(FatalError, match="no retry"):
            await fatal_workflow()
        assert calls["fatal"] == 1
        with pytest.raises(DBOSMaxStepRetriesExceeded):
            await retryable_workflow()
        assert calls["retryable"] == 4


async def test_run_step_should_retry(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_run_step_should_retry"""
    calls = {"n": 0}

    async def fatal() -> None:
        calls["n"] += 1
        raise FatalError("no retry")

    @dbos.workflow()
    async def a_workflow() -> None:
        await dbos.run_step(
            fatal,
            retries_allowed=True,
            interval_seconds=0,
            max_attempts=4,
            should_retry=lambda error: not isinstance(error, FatalError),
        )

    async with dbos.launched():
        with pytest.raises(FatalError):
            await a_workflow()
        assert calls["n"] == 1


async def test_step_should_retry_on_last_attempt(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_should_retry_on_last_attempt"""
    calls = {"n": 0}

    def fatal_on_third(error: BaseException) -> bool:
        return calls["n"] < 3

    @dbos.step(
        retries_allowed=True, interval_seconds=0, max_attempts=3, should_retry=fatal_on_third
    )
    async def a_step() -> None:
        calls["n"] += 1
        raise RetryableError(f"attempt {calls['n']}")

    @dbos.workflow()
    async def a_workflow() -> None:
        await a_step()

    async with dbos.launched():
        with pytest.raises((RetryableError, DBOSMaxStepRetriesExceeded)):
            await a_workflow()
        assert calls["n"] == 3


async def test_step_status(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_status"""
    calls = {"n": 0}

    @dbos.step(retries_allowed=True, interval_seconds=0, max_attempts=5)
    async def failing_step() -> None:
        status = dbos.step_status
        assert status is not None
        assert status.step_id == 1
        assert status.current_attempt == calls["n"]
        assert status.max_attempts == 5
        calls["n"] += 1
        if calls["n"] < 5:
            raise RetryableError("fail")

    @dbos.workflow()
    async def a_workflow() -> None:
        await failing_step()

    async with dbos.launched():
        assert await a_workflow() is None
        assert calls["n"] == 5


async def test_dead_letter_queue(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_dead_letter_queue"""
    runs = {"n": 0}

    def app() -> tuple[DBOS, object]:
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="v1"))

        @instance.workflow(name="dead_letter", max_recovery_attempts=3)
        async def dead_letter() -> None:
            runs["n"] += 1

        return instance, dead_letter

    async def make_pending() -> None:
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'PENDING' WHERE workflow_uuid = %s",
            "wf",
        )

    first, workflow = app()
    async with first.launched():
        with SetWorkflowID("wf"):
            await workflow()  # type: ignore[operator]
    for attempt in range(3):
        await make_pending()
        again, _ = app()
        async with again.launched():
            await (await again.retrieve_workflow("wf")).get_result()
        assert runs["n"] == attempt + 2
    await make_pending()
    last, workflow = app()
    async with last.launched():
        handle = await last.retrieve_workflow("wf")
        with pytest.raises(DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded):
            await handle.get_result()
        assert (await handle.get_status()).status == "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
        with SetWorkflowID("wf"), pytest.raises(DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded):
            await workflow()  # type: ignore[operator]
    assert runs["n"] == 4


async def test_error_serialization() -> None:
    """upstream: tests/test_failures.py::test_error_serialization (errors survive pickling)"""
    errors: list[Exception] = [
        DBOSMaxStepRetriesExceeded("step", 1, [Exception("inner")]),
        DBOSQueueDeduplicatedError("id", "queue", "dedup"),
        DBOSAwaitedWorkflowCancelledError("id"),
    ]
    for error in errors:
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error)
        assert str(back) == str(error)
    retried = pickle.loads(pickle.dumps(errors[0]))
    assert isinstance(retried, DBOSMaxStepRetriesExceeded)
    assert isinstance(retried.errors[0], Exception)


async def test_workflow_error_serialization(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_workflow_error_serialization"""

    class PlainError(Exception):
        pass

    @dbos.workflow()
    async def raises() -> None:
        raise PlainError("custom message")

    async with dbos.launched():
        with SetWorkflowID("wf"), pytest.raises(PlainError):
            await raises()
        status = await dbos.get_workflow_status("wf")
        assert status is not None and status.status == "ERROR"
        # A class pickle cannot find again is still shown as text, not lost.
        assert "custom message" in str(status.error)


async def test_nonserializable_return(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_nonserializable_return"""

    @dbos.workflow()
    async def returns_lambda() -> object:
        return lambda: None

    async with dbos.launched():
        with SetWorkflowID("wf"), pytest.raises(TypeError):
            await returns_lambda()
        status = await dbos.get_workflow_status("wf")
        assert status is not None and status.status == "ERROR"


async def test_recovery_attempts(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_recovery_attempts (each launch counts one)"""
    release = trio.Event()

    def app() -> tuple[DBOS, object]:
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="0.0.1"))
        queue = instance.register_queue("test_queue")

        @instance.workflow(name="child", max_recovery_attempts=1)
        async def child() -> None:
            await release.wait()

        @instance.workflow(name="parent", max_recovery_attempts=2)
        async def parent() -> None:
            with SetWorkflowID("child"):
                await child()

        return instance, (queue, parent)

    expected = {"parent": 1, "child": 1}
    first, (queue, parent) = app()  # type: ignore[misc]
    async with first.launched():
        with SetWorkflowID("parent"):
            await queue.enqueue(parent)
        while await first.get_workflow_status("child") is None:  # noqa: ASYNC110
            await trio.sleep(0.1)
    for attempt in (2, 3):
        again, _ = app()
        async with again.launched():
            await trio.sleep(1)
            statuses = {name: await again.get_workflow_status(name) for name in ("parent", "child")}
        expected = {"parent": attempt, "child": attempt}
        assert {n: s.recovery_attempts for n, s in statuses.items() if s} == expected
    # Past the child's limit of one recovery (two runs), it is dead-lettered.
    assert statuses["child"] is not None
    assert statuses["child"].status == "MAX_RECOVERY_ATTEMPTS_EXCEEDED"


async def test_step_timeout_bounds_step_duration(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_timeout_bounds_step_duration"""
    seen = {"calls": 0, "cancelled": False, "cleanup": False}

    async def half_second() -> str:
        seen["calls"] += 1
        try:
            await trio.sleep(0.5)
            return "done"
        except trio.Cancelled:
            seen["cancelled"] = True
            raise
        finally:
            seen["cleanup"] = True

    @dbos.workflow()
    async def short() -> str:
        result: str = await dbos.run_step(half_second, timeout_seconds=0.2)
        return result

    @dbos.workflow()
    async def long() -> str:
        result: str = await dbos.run_step(half_second, timeout_seconds=20)
        return result

    async with dbos.launched():
        with pytest.raises(DBOSStepTimeoutError) as raised:
            await short()
        assert raised.value.timeout_seconds == 0.2
        assert "half_second" in raised.value.step_name
        assert seen["cancelled"] and seen["cleanup"]
        assert await long() == "done"
        assert seen["calls"] == 2


async def test_step_timeout_is_checkpointed_and_replayed(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_failures.py::test_step_timeout_is_checkpointed_and_replayed"""
    calls = {"n": 0}

    @dbos.step(timeout_seconds=0.1)
    async def slow() -> None:
        calls["n"] += 1
        await trio.sleep(10)

    @dbos.workflow()
    async def a_workflow() -> str:
        try:
            await slow()
        except DBOSStepTimeoutError:
            return "timed out"
        return "finished"

    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await a_workflow() == "timed out"
        forked = await dbos.fork_workflow("wf", 2)
        assert await forked.get_result() == "timed out"
        assert calls["n"] == 1  # the recorded timeout is replayed, the step not rerun


async def test_step_timeout_with_retries(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_timeout_with_retries"""
    calls = {"n": 0}

    @dbos.step(timeout_seconds=0.1, retries_allowed=True, max_attempts=3, interval_seconds=0)
    async def slow_then_fast() -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            await trio.sleep(10)
        return "ok"

    @dbos.workflow()
    async def a_workflow() -> str:
        return await slow_then_fast()

    async with dbos.launched():
        assert await a_workflow() == "ok"
        assert calls["n"] == 3


async def test_step_timeout_inert_outside_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_timeout_inert_outside_workflow"""

    @dbos.step(timeout_seconds=0.1)
    async def slow() -> str:
        await trio.sleep(0.5)
        return "done"

    async with dbos.launched():
        assert await slow() == "done"


async def test_step_timeout_rejects_invalid_config(dbos: DBOS) -> None:
    """upstream: tests/test_failures.py::test_step_timeout_rejects_invalid_config"""
    for bad in (0, math.nan, math.inf, -1):
        with pytest.raises(DBOSException, match="positive and finite"):

            @dbos.step(timeout_seconds=bad)
            async def bad_timeout() -> None:
                return None


async def test_nondeterministic_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_nondeterministic_workflow"""
    from dbos_trio import DBOSUnexpectedStepError

    flag = {"first": True}

    @dbos.step()
    async def step_one() -> None:
        return None

    @dbos.step()
    async def step_two() -> None:
        return None

    @dbos.workflow()
    async def changing() -> None:
        if flag["first"]:
            await step_one()
        else:
            await step_two()

    async with dbos.launched():
        with SetWorkflowID("wf"):
            await changing()
        flag["first"] = False
        forked = await dbos.fork_workflow("wf", 2)  # replays step 1: now a different step
        with pytest.raises(DBOSUnexpectedStepError):
            await forked.get_result()


async def test_step_timeout_via_run_step(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_timeout_via_run_step"""
    cancelled = {"seen": False}

    async def slow() -> None:
        try:
            await trio.sleep(60)
        except trio.Cancelled:
            cancelled["seen"] = True
            raise

    @dbos.workflow()
    async def a_workflow() -> None:
        await dbos.run_step(slow, timeout_seconds=0.2)

    async with dbos.launched():
        with pytest.raises(DBOSStepTimeoutError):
            await a_workflow()
        assert cancelled["seen"]


async def test_step_timeout_preserves_step_outcomes(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_timeout_preserves_step_outcomes"""

    @dbos.step(timeout_seconds=30)
    async def boom() -> None:
        raise ValueError("boom")

    @dbos.workflow()
    async def boom_workflow() -> None:
        await boom()

    @dbos.step(timeout_seconds=0.2)
    async def stubborn() -> str:
        with contextlib.suppress(trio.Cancelled):  # swallowed: still a timeout
            await trio.sleep(60)
        return "suppressed"

    @dbos.workflow()
    async def stubborn_workflow() -> str:
        return await stubborn()

    async with dbos.launched():
        with SetWorkflowID("boom"), pytest.raises(ValueError, match="boom"):
            await boom_workflow()
        [entry] = await dbos.list_workflow_steps("boom")
        assert entry.output is None and isinstance(entry.error, ValueError)
        with SetWorkflowID("stubborn"), pytest.raises(DBOSStepTimeoutError):
            await stubborn_workflow()


async def test_step_should_retry_async_validator(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_step_should_retry_async_validator"""
    max_attempts = 4
    calls = {"fatal": 0, "retry": 0, "run_step": 0}

    async def is_retryable(error: BaseException) -> bool:
        await trio.lowlevel.checkpoint()  # really async
        return not isinstance(error, FatalError)

    async def always_retry(error: BaseException) -> bool:
        return True

    @dbos.step(
        retries_allowed=True,
        interval_seconds=0,
        max_attempts=max_attempts,
        should_retry=is_retryable,
    )
    async def fatal_step() -> None:
        calls["fatal"] += 1
        raise FatalError("no retry")

    @dbos.step(
        retries_allowed=True,
        interval_seconds=0,
        max_attempts=max_attempts,
        should_retry=always_retry,
    )
    async def retry_step() -> None:
        calls["retry"] += 1
        raise RetryableError("retry")

    async def run_step_fatal() -> None:
        calls["run_step"] += 1
        raise FatalError("no retry run_step")

    @dbos.workflow()
    async def fatal_workflow() -> None:
        await fatal_step()

    @dbos.workflow()
    async def retry_workflow() -> None:
        await retry_step()

    @dbos.workflow()
    async def run_step_workflow() -> None:
        await dbos.run_step(
            run_step_fatal,
            retries_allowed=True,
            max_attempts=max_attempts,
            interval_seconds=0,
            should_retry=is_retryable,
        )

    async with dbos.launched():
        # The async validator is awaited: its False stops the retries at once.
        with pytest.raises(FatalError, match="no retry"):
            await fatal_workflow()
        assert calls["fatal"] == 1
        # Its True still runs out the attempts.
        with pytest.raises(DBOSMaxStepRetriesExceeded):
            await retry_workflow()
        assert calls["retry"] == max_attempts
        with pytest.raises(FatalError, match="no retry run_step"):
            await run_step_workflow()
        assert calls["run_step"] == 1


async def test_step_should_retry_sync_step_async_validator_rejected(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_failures.py::test_step_should_retry_sync_step_async_validator_rejected

    Deliberately different (DEVIATIONS.md, docs/how-to/migrating.md): dbos 3.4 refuses an
    async ``should_retry`` for a plain ``def`` step, whose retries it runs in a thread;
    dbos_trio runs every step's retries in the workflow's Trio task, so the validator is
    awaited for a ``def`` step as for an ``async def`` one."""
    calls = {"step": 0, "run_step": 0}

    async def is_retryable(error: BaseException) -> bool:
        await trio.lowlevel.checkpoint()
        return not isinstance(error, FatalError)

    @dbos.step(retries_allowed=True, interval_seconds=0, max_attempts=3, should_retry=is_retryable)
    def plain_step(fatal: bool) -> None:
        calls["step"] += 1
        raise FatalError("boom") if fatal else RetryableError("boom")

    def plain_run_step() -> None:
        calls["run_step"] += 1
        raise FatalError("boom")

    @dbos.workflow()
    async def step_workflow(fatal: bool) -> None:
        await plain_step(fatal)

    @dbos.workflow()
    async def run_step_workflow() -> None:
        await dbos.run_step(
            plain_run_step,
            retries_allowed=True,
            max_attempts=3,
            interval_seconds=0,
            should_retry=is_retryable,
        )

    async with dbos.launched():
        with pytest.raises(FatalError, match="boom"):
            await step_workflow(True)
        assert calls["step"] == 1
        with pytest.raises(DBOSMaxStepRetriesExceeded):
            await step_workflow(False)
        assert calls["step"] == 1 + 3
        with pytest.raises(FatalError, match="boom"):
            await run_step_workflow()
        assert calls["run_step"] == 1


async def test_recovery_during_retries(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_failures.py::test_recovery_during_retries

    Upstream recovers the workflow while its first execution is still in its step's last
    attempt (two executions, both finishing). An execution of dbos_trio that is running
    is never recovered under it (its rows are live), so here the executor stops during
    that attempt and the next launch recovers it: the step's retries start over and the
    workflow completes."""
    max_attempts = 3
    calls = {"n": 0}
    reached = trio.Event()

    @dbos.step(retries_allowed=True, interval_seconds=0, max_attempts=max_attempts)
    async def failing_step() -> None:
        calls["n"] += 1
        if calls["n"] < max_attempts:
            raise RetryableError("fail")
        if calls["n"] == max_attempts:
            reached.set()
            await trio.sleep_forever()  # the executor stops here

    @dbos.workflow()
    async def failing_workflow() -> None:
        await failing_step()

    async with dbos.launched():
        with SetWorkflowID("retrying"):
            await dbos.start_workflow(failing_workflow)
        await reached.wait()
    async with dbos.launched():
        handle = await dbos.retrieve_workflow("retrying")
        assert await handle.get_result() is None
        status = await handle.get_status()
        assert status.status == "SUCCESS" and status.recovery_attempts == 2
    assert calls["n"] == max_attempts + 1
