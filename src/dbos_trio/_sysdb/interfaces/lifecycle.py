"""A backend's lifetime: closing it, the background work it needs, how often waiters look
again, and how its connection has fared.

Invariant: nothing here reads or writes a workflow; these are the calls the executor and the
client make around the backend, not through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from dbos_trio._sysdb.wakeups import WakeupRegistry

# Background work a backend needs for its lifetime; started by the executor in its nursery.
BackgroundTask = Callable[..., Awaitable[None]]


class BackendLifecycle(Protocol):
    """Open-to-close concerns of a connected system database."""

    async def close(self) -> None:
        """Flush pending notifications, then release every connection. Idempotent."""

    wakeups: WakeupRegistry

    def background_tasks(self) -> list[BackgroundTask]:
        """Tasks to run for the executor's lifetime (``task_status``-aware), e.g. LISTEN."""

    @property
    def recheck_interval(self) -> float:
        """How long a waiter may wait before looking at the database again.

        Long (60 s) while a listener is known to deliver notifications, short (1 s)
        otherwise: a notification is only ever a hint, the re-check is what delivers.
        """

    def retry_counts(self) -> tuple[int, int]:
        """Statements retried after a transient error, and outages seen (the database
        unreachable), since this backend opened."""
