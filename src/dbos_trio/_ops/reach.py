"""How a face reaches the system database: the one thing the faces differ in.

``DBOS`` reaches it through its launched executor, and a call made inside a workflow body
is checkpointed as a step with the cross-SDK step name (``DBOS.cancelWorkflow``), its step
id reserved at the call. ``Client``, the command line and the dashboard reach it through a
client runtime, and nothing they call is ever checkpointed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

from dbos_trio._engine.state import Runtime

T = TypeVar("T")


class Reach(Protocol):
    """A face's way to the system database."""

    def runtime(self, operation: str) -> Runtime:
        """The runtime to act through; raises :class:`~dbos_trio.DBOSNotLaunchedError`
        naming ``operation`` when the face is not open (not launched, client closed)."""
        ...

    def checkpoint(
        self, step_name: str, operation: Callable[[], Awaitable[T]]
    ) -> Coroutine[Any, Any, T]:
        """Run ``operation``; a face that checkpoints does so as ``step_name`` when called
        from a workflow body, reserving the step id now (not when awaited)."""
        ...


async def _run(operation: Callable[[], Awaitable[T]]) -> T:
    return await operation()


def unrecorded(step_name: str, operation: Callable[[], Awaitable[T]]) -> Coroutine[Any, Any, T]:
    """:meth:`Reach.checkpoint` for faces that never checkpoint (client, CLI, dashboard)."""
    del step_name
    return _run(operation)
