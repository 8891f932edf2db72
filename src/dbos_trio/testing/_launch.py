"""Launching a :class:`~dbos_trio.DBOS` for a test, on the real clock or on virtual time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Literal

from dbos_trio._engine.runtime.launch import LaunchSettings
from dbos_trio._engine.runtime.launch import launch_settings as engine_launch_settings
from dbos_trio._engine.runtime.pacing import VIRTUAL_BACKGROUND_INTERVAL, on_virtual_time

if TYPE_CHECKING:
    from dbos_trio._dbos import DBOS
    from dbos_trio._sysdb.protocol import SystemDatabase

__all__ = ["VIRTUAL_BACKGROUND_INTERVAL", "VirtualTimeError", "launched", "on_virtual_time"]


class VirtualTimeError(RuntimeError):
    """Virtual time was asked for where it cannot work (a PostgreSQL database)."""


def launch_settings(
    dbos: DBOS,
    background_interval: float | Literal["auto"] | None,
    intercept: Callable[[SystemDatabase], SystemDatabase] | None = None,
) -> LaunchSettings:
    url = dbos.config.resolved_database_url()
    sqlite = url.startswith("sqlite:")
    if on_virtual_time() and not sqlite:
        raise VirtualTimeError(
            "an autojumping MockClock cannot drive a PostgreSQL system database: a task "
            "waiting on a socket counts as idle, so virtual time would jump while a query is "
            "in flight and fire timeouts at random. Use a sqlite:/// database (for example "
            "dbos_trio.testing.temporary_sqlite_url()) for virtual-time tests, and the real "
            "clock for PostgreSQL."
        )
    if background_interval == "auto":
        background_interval = VIRTUAL_BACKGROUND_INTERVAL if on_virtual_time() else None
    if background_interval is not None and not background_interval > 0:
        raise ValueError(f"background_interval must be positive, not {background_interval!r}")
    return LaunchSettings(background_interval=background_interval, intercept=intercept)


@asynccontextmanager
async def launch_with(dbos: DBOS, settings: LaunchSettings) -> AsyncIterator[DBOS]:
    """``dbos.launched()`` with the kit's settings applied to this launch only."""
    async with AsyncExitStack() as stack:
        token = engine_launch_settings.set(settings)
        try:
            await stack.enter_async_context(dbos.launched())
        finally:
            engine_launch_settings.reset(token)
        yield dbos


@asynccontextmanager
async def launched(
    dbos: DBOS, *, background_interval: float | Literal["auto"] | None = "auto"
) -> AsyncIterator[DBOS]:
    """Launch ``dbos`` for the block, as ``dbos.launched()`` does, paced for the clock.

    On the real clock this is exactly ``dbos.launched()``; since a plain
    ``dbos.launched()`` on SQLite paces itself for an autojumping clock the same way
    (:mod:`dbos_trio._engine.runtime.pacing`), what this adds is the PostgreSQL refusal and the
    ``background_interval`` choice. Under an autojumping
    ``trio.testing.MockClock`` (pytest-trio's ``autojump_clock`` fixture) the executor's
    background work — the dequeue supervisor (which releases DELAYED workflows), the
    timeout sweep, every queue's polling, and SQLite waiters' re-checks — runs at most
    every ``background_interval`` virtual seconds (default
    :data:`VIRTUAL_BACKGROUND_INTERVAL`) instead of every second, so simulated days cost
    thousands of wakeups, not millions. Work this process does wakes its waiters at once
    either way (an enqueue wakes its queue's worker, a finished workflow frees its slot
    at once, a send wakes its receiver); what only a poll notices may happen up to that
    much *virtual* time late: a DELAYED workflow coming due, a queued workflow passing
    its deadline, work enqueued by another process. (A rate-limited queue is still polled
    at least twice per limiter period, so its windows reopen on time.) Limits are never
    exceeded and outcomes do not change, only those virtual latencies. Pass
    ``background_interval=None`` for the engine's own timing, or a smaller number for
    tighter virtual timing at the cost of real time.

    Refuses (:class:`VirtualTimeError`) a PostgreSQL database under an autojumping
    MockClock.
    """
    async with launch_with(dbos, launch_settings(dbos, background_interval)):
        yield dbos
