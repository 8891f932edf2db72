"""``DBOS``: the registration container and the face of one executor.

Thin by design: it validates, resolves which registered function a call means, and hands
over to the engine. Nothing connects until :meth:`DBOS.launched`; everything that needs
the database raises :class:`DBOSNotLaunchedError` (naming the operation) before then.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, ParamSpec, Protocol, TypeVar, cast, overload

import trio

from ._config import Config
from ._context import current_step, current_workflow
from ._errors import DBOSException, DBOSNonExistentWorkflowError, DBOSNotLaunchedError
from ._executor import Executor, open_executor
from ._queue import Queue
from ._registry import WORKFLOW_ATTRIBUTE, RegisteredWorkflow, Registry, resolve_workflow
from ._status import StepInfo, WorkflowStatus, step_info, workflow_status
from .core.admission import QueueConfig, RateLimit, validate_queue
from .core.retry import RetryPolicy
from .engine import durable, events, fork, management, messages, queues, runtime, streams
from .engine import workflow as workflows
from .engine.handle import WorkflowHandle, handle_for, start_workflow, wait_first
from .engine.step import StepOptions, run_step
from .sysdb.records import WorkflowFilters

P = ParamSpec("P")
R = TypeVar("R")


def _collapse(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The single exception inside nested one-element groups, or the group itself."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner


class StepDecorator(Protocol):
    """What ``dbos.step(...)`` returns: ``async def`` steps stay awaitable, ``def`` steps
    become awaitable (they run in a worker thread)."""

    @overload
    def __call__(self, func: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]: ...

    @overload
    def __call__(self, func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]: ...


class DBOS:
    """Registers workflows and steps, and runs them once launched."""

    def __init__(self, config: Config) -> None:
        if not isinstance(config, Config):
            raise TypeError(f"DBOS needs a dbos_trio.Config, not {type(config).__name__}")
        self._config = config
        self._registry = Registry()
        self._queues: dict[str, QueueConfig] = {}
        self._executor: Executor | None = None
        self._launching = False

    def __repr__(self) -> str:
        state = "launched" if self._executor is not None else "not launched"
        return f"DBOS({self._config!r}, {state})"

    # --- registration ----------------------------------------------------------------

    def workflow(
        self,
        *,
        name: str | None = None,
        max_recovery_attempts: int | None = 100,
        serialization: Literal["portable", "native"] | None = None,
    ) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Coroutine[Any, Any, R]]]:
        """Register an ``async def`` as a durable workflow."""
        if serialization not in (None, "portable", "native"):
            raise DBOSException(
                f"serialization must be 'portable', 'native' or None, not {serialization!r}"
            )
        if max_recovery_attempts is not None and (
            isinstance(max_recovery_attempts, bool)
            or not isinstance(max_recovery_attempts, int)
            or max_recovery_attempts < 1
        ):
            raise DBOSException(
                "max_recovery_attempts must be a positive integer or None, "
                f"not {max_recovery_attempts!r}"
            )
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
                # Not async: ids are taken at the call (see workflows.call).
                executor = _instance(dbos_ref)._require_executor(
                    f"calling workflow {registered.name}"
                )
                return workflows.call(executor, registered, tuple(args), dict(kwargs))

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
        should_retry: Callable[[BaseException], bool] | None = None,
        timeout_seconds: float | None = None,
    ) -> StepDecorator:
        """Make a function a checkpointed step (``async def`` in-task, ``def`` in a thread)."""
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise DBOSException(f"max_attempts must be a positive integer, not {max_attempts!r}")
        if not interval_seconds >= 0 or not backoff_rate > 0:
            raise DBOSException("interval_seconds must be >= 0 and backoff_rate > 0")
        if timeout_seconds is not None and not (0 < timeout_seconds < float("inf")):
            raise DBOSException(f"timeout_seconds must be finite and > 0, not {timeout_seconds!r}")
        policy = RetryPolicy(retries_allowed, max_attempts, interval_seconds, backoff_rate)
        self._registry.check_registration_allowed("a step")

        def decorate(func: Callable[P, Any]) -> Callable[P, Coroutine[Any, Any, Any]]:
            is_async = inspect.iscoroutinefunction(func)
            if timeout_seconds is not None and not is_async:
                raise DBOSException(
                    f"step {func.__qualname__}: timeout_seconds needs an async def step"
                )
            options = StepOptions(
                name=name or func.__qualname__,
                retry=policy,
                should_retry=should_retry,
                timeout_seconds=timeout_seconds,
            )

            @functools.wraps(func)
            def run_as_step(*args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, Any]:
                # Not async: the step id is taken at the call (see run_step).
                return run_step(options, func, is_async, args, kwargs)

            return run_as_step

        return cast(StepDecorator, decorate)

    # --- lifecycle -------------------------------------------------------------------

    @asynccontextmanager
    async def launched(self) -> AsyncIterator[DBOS]:
        """Launch for the duration of the block; on exit cancel, await, then close.

        An exception raised in the block propagates as itself (a group holding a single
        exception is unwrapped here); workflows interrupted by the exit stay PENDING and
        are recovered by the next launch.
        """
        if self._executor is not None or self._launching:
            raise DBOSException("this DBOS instance is already launched")
        self._launching = True
        collapsed: BaseException | None = None
        try:
            async with open_executor(
                self._config, self._registry, self._start_background
            ) as executor:
                self._executor = executor
                try:
                    yield self
                finally:
                    self._executor = None
        except BaseExceptionGroup as group:
            collapsed = _collapse(group)
            if collapsed is group:
                raise
        finally:
            self._launching = False
        if collapsed is not None:
            # Raised outside the except block, so the user's own __cause__/__context__ stay.
            raise collapsed

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run launched until cancelled: ``await nursery.start(dbos.serve)``."""
        async with self.launched():
            task_status.started()
            await trio.sleep_forever()

    async def _start_background(self, executor: Executor) -> None:
        """Register queues, recover, start the dequeue supervisor (launch order)."""
        await runtime.start(executor, list(self._queues.values()))

    def _require_executor(self, operation: str) -> Executor:
        if self._executor is None:
            raise DBOSNotLaunchedError(operation)
        return self._executor

    @property
    def is_launched(self) -> bool:
        return self._executor is not None

    @property
    def config(self) -> Config:
        return self._config

    @property
    def app_name(self) -> str:
        return self._config.app_name

    @property
    def executor_id(self) -> str:
        return self._require_executor("executor_id").executor_id

    @property
    def app_version(self) -> str:
        return self._require_executor("app_version").app_version

    # --- context ---------------------------------------------------------------------

    @property
    def workflow_id(self) -> str | None:
        """The running workflow's id (inside a step: the enclosing workflow's); else None."""
        ctx = current_workflow.get()
        return None if ctx is None else ctx.workflow_id

    @property
    def step_id(self) -> int | None:
        """The running step's id, inside a step; else None."""
        step = current_step.get()
        return None if step is None else step.step_id

    # --- starting and handles --------------------------------------------------------

    def start_workflow(
        self, fn: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, WorkflowHandle[R]]:
        """Start ``fn`` in the executor's nursery; return once its row exists.

        Not async: inside a workflow the child's step id is taken at the call.
        """
        executor = self._require_executor("start_workflow")
        registered, call_args = resolve_workflow(fn, args)
        return start_workflow(executor, registered, call_args, dict(kwargs))

    def wait_first(
        self, handles: Sequence[WorkflowHandle[Any]]
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """The first of ``handles`` whose workflow is no longer PENDING/ENQUEUED/DELAYED."""
        executor = self._require_executor("wait_first")
        return wait_first(executor, handles)

    async def retrieve_workflow(self, workflow_id: str) -> WorkflowHandle[Any]:
        executor = self._require_executor("retrieve_workflow")
        if await executor.sysdb.get_outcome(workflow_id) is None:
            raise DBOSNonExistentWorkflowError("target", workflow_id)
        return handle_for(executor, workflow_id)

    # --- durable primitives ----------------------------------------------------------

    # Not async: like steps, these take their step ids at the call (see engine/durable.py).

    def sleep(self, seconds: float) -> Coroutine[Any, Any, None]:
        """Durable sleep (workflow only): recovery sleeps only the remainder."""
        return durable.sleep(self._executor, seconds)

    def send(
        self,
        destination_id: str,
        message: Any,
        topic: str | None = None,
        *,
        idempotency_key: str | None = None,
    ) -> Coroutine[Any, Any, None]:
        """Send ``message`` to a workflow; a missing destination raises."""
        executor = self._require_executor("send")
        return messages.send(executor, destination_id, message, topic, idempotency_key)

    def recv(
        self, topic: str | None = None, timeout_seconds: float = 60
    ) -> Coroutine[Any, Any, Any]:
        """The oldest unconsumed message on ``topic`` (workflow only), or None on timeout."""
        executor = self._require_executor("recv")
        return messages.recv(executor, topic, timeout_seconds)

    def set_event(self, key: str, value: Any) -> Coroutine[Any, Any, None]:
        """Publish ``key = value`` for the running workflow (from its body or a step)."""
        executor = self._require_executor("set_event")
        return events.set_event(executor, key, value)

    def get_event(
        self, workflow_id: str, key: str, timeout_seconds: float = 60
    ) -> Coroutine[Any, Any, Any]:
        """The latest value of a workflow's event, waiting up to the timeout; None if unset."""
        executor = self._require_executor("get_event")
        return events.get_event(executor, workflow_id, key, timeout_seconds)

    def write_stream(self, key: str, value: Any) -> Coroutine[Any, Any, None]:
        executor = self._require_executor("write_stream")
        return streams.write_stream(executor, key, value)

    def close_stream(self, key: str) -> Coroutine[Any, Any, None]:
        executor = self._require_executor("close_stream")
        return streams.close_stream(executor, key)

    def read_stream(self, workflow_id: str, key: str) -> AsyncIterator[Any]:
        """``async for value in dbos.read_stream(id, key)``: values in order until the end."""
        executor = self._require_executor("read_stream")
        return streams.read_stream(executor, workflow_id, key)

    # --- queues ----------------------------------------------------------------------

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
    ) -> Queue:
        """Declare a queue (before launch); it is upserted into the ``queues`` table at launch."""
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
        return Queue(self, config)

    def enqueue_workflow(
        self, queue_name: str, fn: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, WorkflowHandle[R]]:
        """Enqueue ``fn`` on ``queue_name`` (declared or not: an unknown queue's row waits).

        Not async: from a workflow body the step id is taken at the call.
        """
        executor = self._require_executor(f"enqueueing on queue {queue_name!r}")
        registered, call_args = resolve_workflow(fn, args)
        return queues.enqueue(
            executor,
            queue_name,
            registered,
            call_args,
            dict(kwargs),
            config=self._queues.get(queue_name),
        )

    async def list_queues(self) -> list[Queue]:
        executor = self._require_executor("list_queues")
        return [Queue(self, config) for config in await executor.sysdb.list_queues(self.app_name)]

    async def retrieve_queue(self, name: str) -> Queue | None:
        executor = self._require_executor("retrieve_queue")
        config = await executor.sysdb.get_queue(name)
        return None if config is None else Queue(self, config)

    async def delete_queue(self, name: str) -> None:
        """Delete the queue's row; its waiting workflows stay ENQUEUED until it returns."""
        executor = self._require_executor("delete_queue")
        await executor.sysdb.delete_queue(name)

    def list_queued_workflows(self, **filters: Any) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        """Queued workflows (DELAYED, ENQUEUED, PENDING on a queue) unless filtered otherwise."""
        filters.setdefault("status", ["DELAYED", "ENQUEUED", "PENDING"])
        filters["queues_only"] = True
        return self._list_workflows("list_queued_workflows", "DBOS.listQueuedWorkflows", filters)

    # --- introspection and management ------------------------------------------------

    # Not async, like the durable calls: from a workflow body each of these is a checkpoint
    # whose step id is reserved at the call (see durable.as_step).

    def get_workflow_status(self, workflow_id: str) -> Coroutine[Any, Any, WorkflowStatus | None]:
        executor = self._require_executor("get_workflow_status")

        async def read() -> WorkflowStatus | None:
            row = await executor.sysdb.get_workflow(workflow_id)
            return None if row is None else workflow_status(executor.codec, row)

        return durable.as_step(executor, "DBOS.getStatus", read)

    def list_workflow_steps(self, workflow_id: str) -> Coroutine[Any, Any, list[StepInfo]]:
        executor = self._require_executor("list_workflow_steps")

        async def read() -> list[StepInfo]:
            steps = await executor.sysdb.list_steps(workflow_id)
            return [step_info(executor.codec, workflow_id, step) for step in steps]

        return durable.as_step(executor, "DBOS.listWorkflowSteps", read)

    def list_workflows(self, **filters: Any) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        return self._list_workflows("list_workflows", "DBOS.listWorkflows", filters)

    def _list_workflows(
        self, operation: str, step_name: str, filters: dict[str, Any]
    ) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        executor = self._require_executor(operation)
        query = WorkflowFilters(scope_application=executor.app_name, **_normalize_filters(filters))

        async def read() -> list[WorkflowStatus]:
            rows = await executor.sysdb.list_workflows(query)
            return [workflow_status(executor.codec, row) for row in rows]

        return durable.as_step(executor, step_name, read)

    def cancel_workflow(
        self, workflow_id: str, *, cancel_children: bool = False
    ) -> Coroutine[Any, Any, None]:
        """Cancel a workflow; one running here stops at once, elsewhere at its next checkpoint."""
        executor = self._require_executor("cancel_workflow")

        async def cancel() -> None:
            await management.cancel_workflows(
                executor, [workflow_id], cancel_children=cancel_children
            )

        return durable.as_step(executor, "DBOS.cancelWorkflow", cancel)

    def resume_workflow(
        self, workflow_id: str, *, queue_name: str | None = None
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """Re-enqueue an unfinished workflow; it continues after its last checkpoint."""
        executor = self._require_executor("resume_workflow")

        async def resume() -> None:
            await management.resume_workflows(executor, [workflow_id], queue_name=queue_name)

        checkpointed = durable.as_step(executor, "DBOS.resumeWorkflow", resume)

        async def resumed() -> WorkflowHandle[Any]:
            await checkpointed
            return handle_for(executor, workflow_id)

        return resumed()

    def fork_workflow(
        self,
        workflow_id: str,
        start_step: int,
        *,
        application_version: str | None = None,
        queue_name: str | None = None,
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """A new workflow that replays the steps before ``start_step`` and re-runs the rest."""
        executor = self._require_executor("fork_workflow")

        async def create() -> str:
            return await fork.fork_workflow(
                executor,
                workflow_id,
                start_step,
                application_version=application_version,
                queue_name=queue_name,
            )

        checkpointed = durable.as_step(executor, "DBOS.forkWorkflow", create)

        async def forked() -> WorkflowHandle[Any]:
            return handle_for(executor, await checkpointed)

        return forked()

    def delete_workflow(
        self, workflow_id: str, *, delete_children: bool = False
    ) -> Coroutine[Any, Any, None]:
        executor = self._require_executor("delete_workflow")

        async def delete() -> None:
            await management.delete_workflows(
                executor, [workflow_id], delete_children=delete_children
            )

        return durable.as_step(executor, "DBOS.deleteWorkflow", delete)

    def set_workflow_delay(
        self, workflow_id: str, *, delay_seconds: float
    ) -> Coroutine[Any, Any, None]:
        """Move a DELAYED workflow's start to ``delay_seconds`` from now."""
        executor = self._require_executor("set_workflow_delay")

        async def delay() -> None:
            await management.set_workflow_delay(executor, workflow_id, delay_seconds)

        return durable.as_step(executor, "DBOS.setWorkflowDelay", delay)


def _instance(dbos_ref: weakref.ref[DBOS]) -> DBOS:
    dbos = dbos_ref()
    if dbos is None:
        raise DBOSException("the DBOS instance this function was registered with no longer exists")
    return dbos


_PLURAL_FILTERS = {
    "workflow_ids": "workflow_ids",
    "status": "statuses",
    "name": "names",
    "app_version": "app_versions",
    "queue_name": "queue_names",
    "executor_id": "executor_ids",
    "forked_from": "forked_from",
    "parent_workflow_id": "parent_workflow_ids",
    "user": "users",
    "application_name": "application_names",
}


def _normalize_filters(filters: dict[str, Any]) -> dict[str, Any]:
    """``list_workflows`` keyword filters (as in dbos 3.4) as :class:`WorkflowFilters` fields."""
    normalized: dict[str, Any] = {}
    for key, value in filters.items():
        if value is None:
            continue
        if key in _PLURAL_FILTERS:
            values: Sequence[str] = [value] if isinstance(value, str) else list(value)
            normalized[_PLURAL_FILTERS[key]] = tuple(values)
        elif key in (
            "start_time",
            "end_time",
            "completed_after",
            "completed_before",
            "dequeued_after",
            "dequeued_before",
        ):
            normalized[_TIME_FILTERS[key]] = _epoch_ms(value)
        elif key in _DIRECT_FILTERS:
            normalized[key] = value
        else:
            raise DBOSException(f"unknown list_workflows filter {key!r}")
    return normalized


_DIRECT_FILTERS = frozenset(
    {
        "workflow_id_prefix",
        "limit",
        "offset",
        "sort_desc",
        "load_input",
        "load_output",
        "queues_only",
        "was_forked_from",
        "has_parent",
    }
)

_TIME_FILTERS = {
    "start_time": "created_after_ms",
    "end_time": "created_before_ms",
    "completed_after": "completed_after_ms",
    "completed_before": "completed_before_ms",
    "dequeued_after": "dequeued_after_ms",
    "dequeued_before": "dequeued_before_ms",
}


def _epoch_ms(value: Any) -> int:
    from datetime import datetime

    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, str):
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    raise DBOSException(f"cannot read {value!r} as a time")
