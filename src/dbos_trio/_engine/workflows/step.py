"""Steps: run once, checkpoint the outcome, replay the checkpoint ever after.

Invariants, and why:

* A step's id is reserved synchronously when it is called, so concurrent steps of one
  workflow are numbered in call order, not completion order.
* A step records exactly one checkpoint, in one statement: its return value, or the
  exception it finally raised (after retries). Replay returns or re-raises it without
  running the body. The body itself is at-least-once: a crash between the body finishing
  and its checkpoint committing runs it again on recovery.
* Control is never recorded: Trio cancellation, a cancelled or re-owned workflow, and
  system-database failures propagate as they are, so a later execution runs the step.
* Outside a workflow, and inside another step, a step is a plain call (inside a plain
  ``def`` step, one that returns its value rather than an awaitable).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import attrs
import trio

from dbos_trio._core.portable_types import return_hint
from dbos_trio._core.retry import RetryPolicy
from dbos_trio._engine.context import (
    StepContext,
    current_step,
    current_workflow,
    workflow_outside_steps,
)
from dbos_trio._engine.observability.hooks import Metrics, Tracing
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.pausing import StepExhausted, counted_step
from dbos_trio._engine.workflows.step_status import StepStatus, step_status_set
from dbos_trio._sysdb.errors import is_control
from dbos_trio.errors import (
    DBOSException,
    DBOSMaxStepRetriesExceeded,
    DBOSStepTimeoutError,
)

logger = logging.getLogger("dbos_trio.step")

ShouldRetry = Callable[[BaseException], bool | Awaitable[bool]]
"""Whether a failed attempt is retried: a plain function, or an ``async def`` one."""


@attrs.frozen
class StepOptions:
    name: str
    retry: RetryPolicy
    # A plain or an async predicate (awaited, whether the step is async def or def).
    should_retry: ShouldRetry | None
    timeout_seconds: float | None
    # "pause": when the last attempt fails, pause the workflow instead of recording the
    # error (see workflows/pausing.py).
    on_exhausted: str = "fail"


async def _invoke(func: Callable[..., Any], is_async: bool, args: Any, kwargs: Any) -> Any:
    if is_async:
        return await func(*args, **kwargs)
    return await trio.to_thread.run_sync(functools.partial(func, *args, **kwargs))


async def _attempt(
    options: StepOptions, func: Callable[..., Any], is_async: bool, args: Any, kwargs: Any
) -> Any:
    if options.timeout_seconds is None:
        return await _invoke(func, is_async, args, kwargs)
    with trio.move_on_after(options.timeout_seconds) as limit:
        result = await _invoke(func, is_async, args, kwargs)
    # A step that swallowed the cancellation and returned still ran past its deadline:
    # a timeout, as in dbos 3.4, not a value recorded as if it had finished in time.
    if limit.cancel_called:
        raise DBOSStepTimeoutError(options.name, options.timeout_seconds)
    return result


async def _with_retries(
    options: StepOptions,
    func: Callable[..., Any],
    is_async: bool,
    args: Any,
    kwargs: Any,
    step_id: int = 0,
    observer: StepObserver | None = None,
) -> Any:
    policy = options.retry
    if not policy.retries_allowed:
        with step_status_set(StepStatus(step_id, None, None)):
            try:
                return await _attempt(options, func, is_async, args, kwargs)
            except Exception as error:
                if _pauses(options, error):
                    raise StepExhausted(options.name, error, error) from error
                raise
    errors: list[BaseException] = []
    for attempt in range(policy.attempts):
        try:
            with step_status_set(StepStatus(step_id, attempt, policy.attempts)):
                return await _attempt(options, func, is_async, args, kwargs)
        except Exception as error:
            if is_control(error):
                raise
            errors.append(error)
            if options.should_retry is not None and not await _retry_wanted(
                options.should_retry, error
            ):
                raise
            if attempt + 1 < policy.attempts:
                if observer is not None:
                    observer.retrying(options.name, attempt + 1, error)
                else:
                    logger.info(
                        "step %s attempt %d failed, retrying: %r", options.name, attempt + 1, error
                    )
                await trio.sleep(policy.delay_after(attempt))
    last = errors[-1]
    context = current_workflow.get()
    logger.warning(
        "step %s of workflow %s failed %d times, its maximum: giving up (last error %s: %s)",
        options.name,
        None if context is None else context.workflow_id,
        policy.attempts,
        type(last).__qualname__,
        last,
    )
    exceeded = DBOSMaxStepRetriesExceeded(options.name, policy.attempts, errors)
    if _pauses(options, last):
        raise StepExhausted(options.name, last, exceeded) from last
    raise exceeded


async def _retry_wanted(should_retry: ShouldRetry, error: BaseException) -> bool:
    """The predicate's verdict on ``error``, awaited if it is ``async def`` (it runs in
    the step's Trio task between attempts, so it may await for any step)."""
    verdict = should_retry(error)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    return bool(verdict)


def _pauses(options: StepOptions, error: BaseException) -> bool:
    """Whether the step's final failure pauses its workflow instead of failing the step:
    its options say so, it runs in a workflow body, and the error is the step's own."""
    return (
        options.on_exhausted == "pause"
        and current_workflow.get() is not None
        and not is_control(error)
    )


def run_step(
    options: StepOptions, func: Callable[..., Any], is_async: bool, args: Any, kwargs: Any
) -> Coroutine[Any, Any, Any] | Any:
    """Call a step: reserve its id now (synchronously), run or replay it when awaited.

    Not a coroutine function on purpose: the id must be taken at the call, so that
    ``nursery.start_soon(step, ...)`` in a loop numbers the steps in call order although
    Trio starts the tasks in any order. A call that is never awaited leaves a gap.

    Called off the Trio thread — from the body of a plain ``def`` step, which runs in a
    worker thread and cannot await — a step is a plain call that returns its value (an
    ``async def`` one runs on the Trio thread meanwhile).
    """
    if not trio.lowlevel.in_trio_task():
        if workflow_outside_steps() is not None:
            raise DBOSException(
                f"step {options.name} was called from a thread of a workflow, outside any "
                "step: call steps from the workflow's own tasks"
            )
        if is_async:
            return trio.from_thread.run(functools.partial(func, *args, **kwargs))
        return func(*args, **kwargs)
    slot = checkpoint.reserve(options.name)
    if slot is None:
        return _invoke(func, is_async, args, kwargs)
    return _checkpointed(slot, options, func, is_async, args, kwargs)


async def _checkpointed(
    slot: Slot,
    options: StepOptions,
    func: Callable[..., Any],
    is_async: bool,
    args: Any,
    kwargs: Any,
) -> Any:
    executor = slot.executor
    if executor.tracing is not None or executor.metrics is not None:
        return await _observed(slot, options, func, is_async, args, kwargs)

    async def body() -> Any:
        token = current_step.set(StepContext(slot.ctx, slot.function_id))
        try:
            if (
                is_async
                and options.timeout_seconds is None
                and not options.retry.retries_allowed
                and options.on_exhausted == "fail"
            ):
                with step_status_set(StepStatus(slot.function_id, None, None)):
                    value = await func(*args, **kwargs)  # what _with_retries comes down to
            else:
                value = await _with_retries(options, func, is_async, args, kwargs, slot.function_id)
        finally:
            current_step.reset(token)
        return value

    return await counted_step(
        slot.ctx,
        lambda: checkpoint.checkpointed(
            slot, body, what=f"step {options.name}", hint=return_hint(func)
        ),
    )


@attrs.frozen
class StepObserver:
    """Tells tracing and metrics about one step's retries (only while either is on)."""

    tracing: Tracing | None
    metrics: Metrics | None

    def retrying(self, name: str, attempt: int, error: BaseException) -> None:
        logger.info("step %s attempt %d failed, retrying: %r", name, attempt, error)
        if self.tracing is not None:
            self.tracing.attempt_failed(attempt, error)
        if self.metrics is not None:
            self.metrics.step_retried(name)


async def _observed(
    slot: Slot,
    options: StepOptions,
    func: Callable[..., Any],
    is_async: bool,
    args: Any,
    kwargs: Any,
) -> Any:
    """:func:`_checkpointed`'s path while tracing or metrics are on: retries become span
    events and counts, and each run of the body (not a replay) is timed."""
    executor = slot.executor
    observer = StepObserver(executor.tracing, executor.metrics)

    metrics = observer.metrics

    async def body() -> Any:
        token = current_step.set(StepContext(slot.ctx, slot.function_id))
        started = trio.current_time()
        try:
            value = await _with_retries(
                options, func, is_async, args, kwargs, slot.function_id, observer
            )
        except Exception as error:
            # The step's own failure is counted; control (a lost database, a cancelled
            # or re-owned workflow) is not a step outcome, nor is Trio cancellation.
            if metrics is not None and not is_control(error):
                metrics.step_ended(options.name, trio.current_time() - started, True)
            raise
        finally:
            current_step.reset(token)
        if metrics is not None:
            metrics.step_ended(options.name, trio.current_time() - started, False)
        return value

    return await counted_step(
        slot.ctx,
        lambda: checkpoint.checkpointed(
            slot, body, what=f"step {options.name}", hint=return_hint(func)
        ),
    )
