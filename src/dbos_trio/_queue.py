"""``Queue``: a named durable queue, declared with ``dbos.register_queue`` before launch."""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ._errors import DBOSException
from .core.admission import QueueConfig
from .engine.handle import WorkflowHandle

if TYPE_CHECKING:
    from ._dbos import DBOS

P = ParamSpec("P")
R = TypeVar("R")


class Queue:
    """A queue's configuration, and the way to enqueue workflows on it."""

    def __init__(self, dbos: DBOS, config: QueueConfig) -> None:
        self._dbos = weakref.ref(dbos)
        self._config = config

    def __repr__(self) -> str:
        return f"Queue({self._config!r})"

    @property
    def name(self) -> str:
        return self._config.name

    @property
    def config(self) -> QueueConfig:
        return self._config

    def __getattr__(self, field: str) -> Any:
        # global_concurrency, worker_concurrency, limiter, partition_* , polling_interval_sec
        if field.startswith("_"):
            raise AttributeError(field)
        return getattr(self._config, field)

    async def enqueue(
        self, fn: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
    ) -> WorkflowHandle[R]:
        """Enqueue ``fn(*args, **kwargs)``; returns once its row exists."""
        dbos = self._dbos()
        if dbos is None:
            raise DBOSException(f"the DBOS instance of queue {self.name!r} no longer exists")
        return await dbos.enqueue_on(self.name, fn, *args, **kwargs)
