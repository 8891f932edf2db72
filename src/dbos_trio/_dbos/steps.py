"""``dbos.run_step`` (any callable as a checkpointed step) and ``dbos.step_status``.

``run_step`` is the decorator's step without the decorator: the same options, the same
checkpoint, the step id taken at the call (so it is not ``async def``: it returns the
coroutine to await). The callable's positional arguments follow it; keyword arguments
are the step's options (wrap the callable in ``functools.partial`` for its own keyword
arguments).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any

import trio

from dbos_trio._core import validate
from dbos_trio._core.retry import MAX_RETRY_INTERVAL_SECONDS, RetryPolicy
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.workflows.pausing import OnExhausted, check_on_exhausted
from dbos_trio._engine.workflows.step import ShouldRetry, StepOptions, run_step
from dbos_trio._engine.workflows.step_status import StepStatus, current_step_status
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException, DBOSInvalidArgumentError


def check_step_timeout(timeout_seconds: float | None) -> None:
    """Refuse a step timeout that is not a positive, finite number of seconds, with dbos
    3.4's words first ("Step timeouts must be positive and finite") and ours after."""
    try:
        validate.optional_seconds(timeout_seconds, "timeout_seconds", positive=True)
    except DBOSInvalidArgumentError as error:
        detail = str(error).removeprefix("DBOS Error: ")
        raise DBOSInvalidArgumentError(
            f"Step timeouts must be positive and finite: {detail}"
        ) from None


def _callable_name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def _is_async(fn: Callable[..., Any]) -> bool:
    target = getattr(fn, "func", fn)  # a functools.partial of a coroutine function
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(target)


class Steps(DBOSBase):
    @property
    def step_status(self) -> StepStatus | None:
        """Inside a checkpointed step: its id and, while it retries automatically, the
        attempt running (0-based) and the most it may make; None elsewhere."""
        return current_step_status()

    def run_step(
        self,
        fn: Callable[..., Any],
        *args: Any,
        name: str | None = None,
        retries_allowed: bool = False,
        max_attempts: int = 3,
        interval_seconds: float = 1.0,
        backoff_rate: float = 2.0,
        max_interval_seconds: float = MAX_RETRY_INTERVAL_SECONDS,
        should_retry: ShouldRetry | None = None,
        timeout_seconds: float | None = None,
        on_exhausted: OnExhausted = "fail",
    ) -> Coroutine[Any, Any, Any]:
        """Run ``fn(*args)`` as a checkpointed step named ``name`` (default: its
        ``__qualname__``) with the options of :meth:`step` (``on_exhausted="pause"``
        included); in a workflow body its value or final error is recorded and replayed,
        elsewhere it is a plain call. ``async def`` callables run in the calling task,
        plain ones in a worker thread. Bad options raise at the call; cancellation while it
        runs records nothing."""
        if not callable(fn):
            raise DBOSArgumentTypeError(f"run_step needs a callable, not {type(fn).__name__}")
        validate.optional_text(name, "step name")
        validate.boolean(retries_allowed, "retries_allowed")
        validate.integer(max_attempts, "max_attempts", low=1, high=validate.INT32_MAX)
        validate.seconds(interval_seconds, "interval_seconds")
        if validate.number(backoff_rate, "backoff_rate") <= 0:
            raise DBOSInvalidArgumentError(f"backoff_rate must be > 0, not {backoff_rate!r}")
        validate.seconds(max_interval_seconds, "max_interval_seconds")
        check_step_timeout(timeout_seconds)
        exhausted = check_on_exhausted(on_exhausted)
        if should_retry is not None and not callable(should_retry):
            raise DBOSArgumentTypeError(f"should_retry must be callable, not {should_retry!r}")
        is_async = _is_async(fn)
        step_name = name or _callable_name(fn)
        if timeout_seconds is not None and not is_async:
            raise DBOSException(f"step {step_name}: timeout_seconds needs an async def step")
        self._require_executor("run_step")
        options = StepOptions(
            name=step_name,
            retry=RetryPolicy(
                retries_allowed, max_attempts, interval_seconds, backoff_rate, max_interval_seconds
            ),
            should_retry=should_retry,
            timeout_seconds=timeout_seconds,
            on_exhausted=exhausted,
        )
        if not trio.lowlevel.in_trio_task():
            raise DBOSException("run_step must be called from a Trio task, not a worker thread")
        started: Coroutine[Any, Any, Any] = run_step(options, fn, is_async, args, {})
        return started
