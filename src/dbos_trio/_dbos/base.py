"""The state a ``DBOS`` instance holds, shared by the parts of its face."""

from __future__ import annotations

from dbos_trio._config import Config
from dbos_trio._core.admission import QueueConfig
from dbos_trio._engine.state import Executor, ExecutorSlot
from dbos_trio._registry import Registry


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

    def __repr__(self) -> str:
        state = "launched" if self._slot.executor is not None else "not launched"
        return f"DBOS({self._config!r}, {state})"

    def _require_executor(self, operation: str) -> Executor:
        return self._slot.require(operation)

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
