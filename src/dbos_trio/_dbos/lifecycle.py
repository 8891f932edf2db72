"""``launched()`` and ``serve``: the lifetime of a ``DBOS`` instance's executor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Self

import trio

from dbos_trio._config import require_optional_seconds
from dbos_trio._core.ending import collapse
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.runtime.launch import open_executor
from dbos_trio.errors import DBOSException


class Lifecycle(DBOSBase):
    @asynccontextmanager
    async def launched(self, *, drain_seconds: float | None = None) -> AsyncIterator[Self]:
        """Launch for the duration of the block; on exit cancel, await, then close.

        Launch connects, migrates (or verifies), registers the application version,
        recovers this executor's abandoned workflows and starts the background tasks; a
        failure there raises (:class:`~dbos_trio.DBOSInitializationError` for a bad
        database) and leaves nothing open. An exception raised in the block propagates
        as itself (a group holding a single exception is unwrapped here); workflows
        interrupted by the exit — normal, error or cancellation — stay PENDING and are
        recovered by the next launch.

        ``drain_seconds`` (default ``Config.shutdown_drain_seconds``; None: no drain) makes
        the exit graceful: claiming stops, and the workflows running here get up to that
        long (Trio clock) to finish before the rest are cancelled and stay PENDING. Only a
        block that leaves (returns or raises) drains: cancelling it from outside cancels
        its workflows at once too (see the SIGTERM recipe in ``docs/operations.md``,
        which leaves the block on the signal). A bad value raises
        :class:`~dbos_trio.DBOSConfigError` before anything connects.
        """
        require_optional_seconds(drain_seconds, "launched drain_seconds")
        require_trio("launched()")
        if self._slot.executor is not None or self._launching:
            raise DBOSException("this DBOS instance is already launched")
        self._launching = True
        collapsed: BaseException | None = None
        try:
            async with open_executor(
                self._config,
                self._registry,
                list(self._queues.values()),
                self._slot,
                drain_seconds=drain_seconds,
                queue_conflicts=dict(self._queue_on_conflict),
            ):
                yield self
        except BaseExceptionGroup as group:
            collapsed = collapse(group)
            if collapsed is group:
                raise
        finally:
            self._launching = False
        if collapsed is not None:
            # Raised outside the except block, so the user's own __cause__/__context__ stay.
            raise collapsed

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run launched until cancelled: ``await nursery.start(dbos.serve)``.

        Reports started once launched; cancellation shuts down as ``launched()`` does.
        """
        async with self.launched():
            task_status.started()
            await trio.sleep_forever()


def require_trio(what: str) -> None:
    """Raise a :class:`~dbos_trio.DBOSException` that says what to do when ``what`` is
    awaited outside a Trio run (``asyncio.run(main())`` gives Trio's bare "must be called
    from async context" otherwise)."""
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        raise DBOSException(
            f"{what} runs on Trio, and this is not a Trio run: start your program with "
            "trio.run(main), not asyncio.run(main) (asyncio-only libraries can still run "
            "inside steps: @dbos.step(asyncio=True), see dbos_trio.aio)"
        ) from None
