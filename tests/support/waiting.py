"""Waiting in a test for something to become true: poll it, bounded in real time; and the
suite's hang guard, with the long query that tells a cancellation from a finished query."""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Awaitable, Callable

import trio
import trio.testing

HANG_GUARD = 60.0
"""Real seconds after which a test fails instead of hanging. Never a bound on how fast
something is: a test that tells two mechanisms apart by time makes the wrong one take far
longer than this (a ``LONG_QUERY``, a ten-minute timeout), so that only a hang — or the
wrong mechanism — reaches it, however loaded the machine."""

LONG_QUERY_SECONDS = 600
LONG_QUERY = f"SELECT pg_sleep({LONG_QUERY_SECONDS})"
"""A query that, left to run, outlasts :data:`HANG_GUARD` tenfold: a test that cancels it
and goes on within the guard shows the cancellation, not the query's end, let it go."""


async def wait_until(
    check: Callable[[], object] | Callable[[], Awaitable[object]],
    *,
    timeout: float = 15.0,
    interval: float = 0.02,
    what: str = "condition",
) -> None:
    """Return as soon as ``check()`` is true; look again every ``interval`` seconds.

    ``check`` is a plain callable, or one whose result is awaited (an ``async def``, or a
    lambda returning a coroutine); the result counts for its truth value. After ``timeout``
    seconds of *real* time it fails with :class:`AssertionError` naming ``what``.

    Real time, whatever clock Trio runs on: what a test waits for is usually a database
    round trip or another task's I/O, which a ``MockClock`` does not drive (under the
    autojump clock a task waiting on a socket counts as idle, so a Trio deadline would
    fire at once), and under ``MockClock(rate=...)`` the bound stays the same number of
    real seconds. On Trio's default clock the two are the same. The pause between looks
    is a Trio sleep, so virtual time still advances while a test waits — except on a
    clock that stands still (``MockClock(rate=0)`` without autojump), where a Trio sleep
    would never end: there the pause is real time, in a worker thread, and virtual time
    moves only when the test jumps it.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        if _frozen(trio.lowlevel.current_clock()):
            await trio.to_thread.run_sync(time.sleep, interval)
        else:
            await trio.sleep(interval)


def _frozen(clock: trio.abc.Clock) -> bool:
    return (
        isinstance(clock, trio.testing.MockClock)
        and clock.rate == 0
        and clock.autojump_threshold == math.inf
    )
