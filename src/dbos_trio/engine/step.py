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
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import attrs
import trio

from .._errors import (
    DBOSException,
    DBOSMaxStepRetriesExceeded,
    DBOSStepTimeoutError,
)
from ..core.retry import RetryPolicy
from ..sysdb.errors import is_control
from . import checkpoint
from .checkpoint import Slot
from .context import StepContext, current_step, workflow_outside_steps
from .step_status import StepStatus, step_status_set

logger = logging.getLogger("dbos_trio.step")


@attrs.frozen
class StepOptions:
    name: str
    retry: RetryPolicy
    should_retry: Callable[[BaseException], bool] | None
    timeout_seconds: float | None


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
        return await _invoke(func, is_async, args, kwargs)
    assert limit.cancelled_caught
    raise DBOSStepTimeoutError(options.name, options.timeout_seconds)


async def _with_retries(
    options: StepOptions,
    func: Callable[..., Any],
    is_async: bool,
    args: Any,
    kwargs: Any,
    step_id: int = 0,
) -> Any:
    policy = options.retry
    if not policy.retries_allowed:
        return await _attempt(options, func, is_async, args, kwargs)
    errors: list[BaseException] = []
    for attempt in range(policy.attempts):
        try:
            with step_status_set(StepStatus(step_id, attempt, policy.attempts)):
                return await _attempt(options, func, is_async, args, kwargs)
        except Exception as error:
            if is_control(error):
                raise
            errors.append(error)
            if options.should_retry is not None and not options.should_retry(error):
                raise
            if attempt + 1 < policy.attempts:
                delay = policy.delay_after(attempt)
                # INFO, not WARNING: a retry is the policy working; exhaustion raises.
                logger.info(
                    "Step %s failed (attempt %d of %d): %s: %s; retrying in %.3g s",
                    options.name,
                    attempt + 1,
                    policy.attempts,
                    type(error).__name__,
                    error,
                    delay,
                )
                await trio.sleep(delay)
    raise DBOSMaxStepRetriesExceeded(options.name, policy.attempts, errors)


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
    async def body() -> Any:
        token = current_step.set(StepContext(slot.ctx, slot.function_id))
        try:
            if is_async and options.timeout_seconds is None and not options.retry.retries_allowed:
                with step_status_set(StepStatus(slot.function_id, None, None)):
                    value = await func(*args, **kwargs)  # what _with_retries comes down to
            elif not options.retry.retries_allowed:
                with step_status_set(StepStatus(slot.function_id, None, None)):
                    value = await _with_retries(options, func, is_async, args, kwargs)
            else:
                value = await _with_retries(options, func, is_async, args, kwargs, slot.function_id)
        finally:
            current_step.reset(token)
        return value

    return await checkpoint.checkpointed(slot, body, what=f"step {options.name}")
