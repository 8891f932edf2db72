"""Registering workflows, steps and queues on a ``DBOS`` instance, before launch."""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, Protocol, TypeVar, cast, overload

from dbos_trio import aio
from dbos_trio._core import validate
from dbos_trio._core.admission import QueueConfig, RateLimit, validate_queue
from dbos_trio._core.retry import MAX_RETRY_INTERVAL_SECONDS, RetryPolicy
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._dbos.steps import check_step_timeout
from dbos_trio._engine.observability.failures import WorkflowFailure
from dbos_trio._engine.queues.stored import OnConflict, check_on_conflict
from dbos_trio._engine.workflows import children
from dbos_trio._engine.workflows.pausing import OnExhausted, check_on_exhausted
from dbos_trio._engine.workflows.step import ShouldRetry, StepOptions, run_step
from dbos_trio._queue import Queue
from dbos_trio._registry import WORKFLOW_ATTRIBUTE, RegisteredWorkflow
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException, DBOSInvalidArgumentError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

P = ParamSpec("P")
R = TypeVar("R")


class StepDecorator(Protocol):
    """What ``dbos.step(...)`` returns: ``async def`` steps stay awaitable, ``def`` steps
    become awaitable (they run in a worker thread)."""

    @overload
    def __call__(self, func: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]: ...

    @overload
    def __call__(self, func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]: ...


def _executor_of(dbos_ref: weakref.ref[Any], operation: str) -> Executor:
    dbos: DBOSBase | None = dbos_ref()
    if dbos is None:
        raise DBOSException("the DBOS instance this function was registered with no longer exists")
    return dbos._require_executor(operation)


class Registration(DBOSBase):
    def workflow(
        self,
        *,
        name: str | None = None,
        max_recovery_attempts: int | None = 100,
        serialization: Literal["portable", "native"] | None = None,
    ) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Coroutine[Any, Any, R]]]:
        """Register an ``async def`` as a durable workflow (before launch).

        Calling the decorated function runs the workflow in the caller's task and returns
        its result or raises its error; inside a workflow it is a child workflow. A sync
        function raises ``TypeError`` here; a bad option raises :class:`DBOSException`.
        """
        validate.optional_text(name, "workflow name")
        if serialization not in (None, "portable", "native"):
            raise DBOSInvalidArgumentError(
                f"serialization must be 'portable', 'native' or None, not {serialization!r}"
            )
        validate.optional_integer(max_recovery_attempts, "max_recovery_attempts", low=1)
        dbos_ref = weakref.ref(self)

        def decorate(func: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
            if not inspect.iscoroutinefunction(func):
                raise TypeError(
                    f"workflow {getattr(func, '__qualname__', func)!r} must be an async def"
                )
            registered = RegisteredWorkflow(
                name=name or func.__qualname__,
                func=func,
                max_recovery_attempts=max_recovery_attempts,
                portable=serialization == "portable",
                native=serialization == "native",
            )
            self._registry.add_workflow(registered)

            @functools.wraps(func)
            def run_workflow(*args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, R]:
                # Not async: ids are taken at the call (see engine/children.py).
                executor = _executor_of(dbos_ref, f"calling workflow {registered.name}")
                return children.call(executor, registered, tuple(args), dict(kwargs))

            setattr(run_workflow, WORKFLOW_ATTRIBUTE, registered)
            return run_workflow

        return decorate

    def step(
        self,
        *,
        name: str | None = None,
        retries_allowed: bool = False,
        max_attempts: int = 3,
        interval_seconds: float = 1.0,
        backoff_rate: float = 2.0,
        should_retry: ShouldRetry | None = None,
        timeout_seconds: float | None = None,
        max_interval_seconds: float = MAX_RETRY_INTERVAL_SECONDS,
        asyncio: bool = False,
        on_exhausted: OnExhausted = "fail",
    ) -> StepDecorator:
        """Make a function a checkpointed step (``async def`` in-task, ``def`` in a thread).

        Inside a workflow a step runs once and its value or final error is checkpointed;
        cancellation while it runs records nothing (a later execution runs it again).
        Outside a workflow, and inside another step, it is a plain call. With
        ``retries_allowed`` a failed attempt is logged at INFO with its number and retried
        after ``interval_seconds * backoff_rate ** attempt``, at most
        ``max_interval_seconds``, unless ``should_retry(error)`` (a plain or an ``async
        def`` function, for ``def`` and ``async def`` steps alike) says False: then the
        error is the step's at once.

        ``asyncio=True`` runs an asyncio-flavoured ``async def`` (aiohttp, ...) on a
        trio-asyncio loop, cancellation mapped both ways (see :mod:`dbos_trio.aio`); it
        needs the ``dbos-trio[asyncio]`` extra (``ImportError`` naming it otherwise).

        ``on_exhausted="pause"``: when the step's last attempt fails (its only one without
        ``retries_allowed``), its workflow is PAUSED instead of failing, with a WARNING
        naming the workflow, the step and the error; after the fix, ``unpause_workflow``
        (``dbos-trio workflow unpause ID``) runs the step again. The default ``"fail"``
        records the error. Anything else raises ``DBOSInvalidArgumentError`` here.
        """
        validate.optional_text(name, "step name")
        exhausted = check_on_exhausted(on_exhausted)
        validate.boolean(retries_allowed, "retries_allowed")
        validate.integer(max_attempts, "max_attempts", low=1, high=validate.INT32_MAX)
        validate.seconds(interval_seconds, "interval_seconds")
        if validate.number(backoff_rate, "backoff_rate") <= 0:
            raise DBOSInvalidArgumentError(f"backoff_rate must be > 0, not {backoff_rate!r}")
        check_step_timeout(timeout_seconds)
        validate.boolean(asyncio, "asyncio")
        if should_retry is not None and not callable(should_retry):
            raise DBOSArgumentTypeError(f"should_retry must be callable, not {should_retry!r}")
        validate.seconds(max_interval_seconds, "max_interval_seconds")
        policy = RetryPolicy(
            retries_allowed, max_attempts, interval_seconds, backoff_rate, max_interval_seconds
        )
        self._registry.check_registration_allowed("a step")

        def decorate(func: Callable[P, Any]) -> Callable[P, Coroutine[Any, Any, Any]]:
            body = aio.as_trio(func) if asyncio else func
            is_async = inspect.iscoroutinefunction(body)
            if timeout_seconds is not None and not is_async:
                raise DBOSException(
                    f"step {func.__qualname__}: timeout_seconds needs an async def step"
                )
            options = StepOptions(
                name=name or func.__qualname__,
                retry=policy,
                should_retry=should_retry,
                timeout_seconds=timeout_seconds,
                on_exhausted=exhausted,
            )

            @functools.wraps(func)
            def run_as_step(*args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, Any]:
                # Not async: the step id is taken at the call (see run_step).
                return run_step(options, body, is_async, args, kwargs)

            return run_as_step

        return cast(StepDecorator, decorate)

    def register_queue(
        self,
        name: str,
        *,
        global_concurrency: int | None = None,
        worker_concurrency: int | None = None,
        limiter: RateLimit | None = None,
        partition_concurrency: int | None = None,
        partition_worker_concurrency: int | None = None,
        partition_limiter: RateLimit | None = None,
        polling_interval_sec: float = 1.0,
        on_conflict: OnConflict = "update_if_latest_version",
    ) -> Queue:
        """Declare a queue (before launch); it is upserted into the ``queues`` table at
        launch. A bad value raises ``ValueError`` here, before anything is written.

        ``on_conflict`` decides what an existing row becomes, as in the official SDK:
        ``"update_if_latest_version"`` (the default) overwrites it only when this launch
        runs the latest application version, ``"always_update"`` always, ``"never_update"``
        never; a row of another application raises at launch in every mode."""
        check_on_conflict(on_conflict)
        self._registry.check_registration_allowed(f"queue {name!r}")
        config = QueueConfig(
            name=name,
            global_concurrency=global_concurrency,
            worker_concurrency=worker_concurrency,
            limiter=limiter,
            partition_concurrency=partition_concurrency,
            partition_worker_concurrency=partition_worker_concurrency,
            partition_limiter=partition_limiter,
            polling_interval_sec=polling_interval_sec,
            application_name=self._config.app_name,
        )
        validate_queue(config)
        self._queues[name] = config
        self._queue_on_conflict[name] = on_conflict
        return Queue(self._slot, config)

    def on_failure(
        self, hook: Callable[[WorkflowFailure], Awaitable[None]]
    ) -> Callable[[WorkflowFailure], Awaitable[None]]:
        """Register ``hook`` (an ``async def`` taking a :class:`~dbos_trio.WorkflowFailure`)
        to be called, before launch, as a decorator or a plain call.

        Called once for each workflow this executor records as ERROR, or parks as
        MAX_RECOVERY_ATTEMPTS_EXCEEDED — after the outcome is durable, in a task of the
        executor's nursery, never in the workflow: an alert, a page, a ticket. What it
        raises is logged and contained (the workflow, its callers and the other hooks are
        not affected); at shutdown it is cancelled like every task of the executor. A
        plain ``def`` raises ``TypeError`` here; after launch, ``DBOSException``.
        """
        if not inspect.iscoroutinefunction(hook):
            raise TypeError(f"a failure hook must be an async def, not {hook!r}")
        self._registry.add_failure_hook(hook)
        return hook
