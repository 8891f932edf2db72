"""The state a ``DBOS`` instance holds, shared by the parts of its face."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from dbos_trio._config import Config
from dbos_trio._core.admission import QueueConfig
from dbos_trio._engine.state import Executor, ExecutorSlot
from dbos_trio._engine.workflows.checkpoint import as_step
from dbos_trio._engine.workflows.handle import WorkflowHandle, handle_for
from dbos_trio._registry import Registry

T = TypeVar("T")


class ExecutorReach:
    """``DBOS``'s :class:`~dbos_trio._ops.reach.Reach`: its launched executor, and every
    operation called from a workflow body checkpointed (its step id reserved at the call).
    """

    def __init__(self, slot: ExecutorSlot) -> None:
        self._slot = slot

    def runtime(self, operation: str) -> Executor:
        """The executor; :class:`~dbos_trio.DBOSNotLaunchedError` naming ``operation``
        outside ``launched()``."""
        return self._slot.require(operation)

    def checkpoint(
        self, step_name: str, operation: Callable[[], Awaitable[T]]
    ) -> Coroutine[Any, Any, T]:
        """``operation``, as the checkpoint ``step_name`` when called from a workflow body."""
        return as_step(step_name, operation)


class DBOSBase:
    """Configuration, registry, declared queues, and the executor while launched."""

    def __init__(self, config: Config) -> None:
        if not isinstance(config, Config):
            raise TypeError(f"DBOS needs a dbos_trio.Config, not {type(config).__name__}")
        self._config = config
        self._registry = Registry()
        self._queues: dict[str, QueueConfig] = {}
        # register_queue's on_conflict per declared queue (engine/queue_admin.py).
        self._queue_on_conflict: dict[str, str] = {}
        self._slot = ExecutorSlot()
        self._launching = False
        # How the shared operations (dbos_trio._ops) reach the database from this face.
        self._reach = ExecutorReach(self._slot)

    def __repr__(self) -> str:
        state = "launched" if self._slot.executor is not None else "not launched"
        return f"DBOS({self._config!r}, {state})"

    def _require_executor(self, operation: str) -> Executor:
        return self._slot.require(operation)

    def _handled(
        self, workflow_id: Coroutine[Any, Any, str]
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """A shared operation's answer (an id) as this face's handle. Called once the
        operation was made, so launched: it checked."""
        return _handle(self._require_executor("handle"), workflow_id)

    def _handles(
        self, workflow_ids: Coroutine[Any, Any, list[str]]
    ) -> Coroutine[Any, Any, list[WorkflowHandle[Any]]]:
        """:meth:`_handled` for an operation answering several ids."""
        return _handle_each(self._require_executor("handle"), workflow_ids)

    @property
    def is_launched(self) -> bool:
        """Whether the instance is inside ``launched()`` (or ``serve``) right now."""
        return self._slot.executor is not None

    @property
    def config(self) -> Config:
        """The :class:`~dbos_trio.Config` this instance was made with."""
        return self._config

    @property
    def app_name(self) -> str:
        """``Config.app_name``: the application name stamped on every workflow row."""
        return self._config.app_name

    @property
    def executor_id(self) -> str:
        """This executor's id (launched only: ``DBOSNotLaunchedError`` before)."""
        return self._require_executor("executor_id").executor_id

    @property
    def app_version(self) -> str:
        """The application version this launch runs (launched only)."""
        return self._require_executor("app_version").app_version


async def _handle(executor: Executor, workflow_id: Coroutine[Any, Any, str]) -> WorkflowHandle[Any]:
    return handle_for(executor, await workflow_id)


async def _handle_each(
    executor: Executor, workflow_ids: Coroutine[Any, Any, list[str]]
) -> list[WorkflowHandle[Any]]:
    return [handle_for(executor, workflow_id) for workflow_id in await workflow_ids]
