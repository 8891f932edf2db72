"""The one place dbos_trio reads time.

Invariant: every durable time the engine computes (sleep wake-ups, deadlines, rate-limit
windows, polling intervals, cron ticks) comes from :class:`Clock`, which derives epoch time
from ``trio.current_time()`` anchored to the wall clock once. So a ``trio.testing.MockClock``
drives all of it: a week of durable sleep passes in a blink under the autojump clock, and
nothing in the engine waits on real time by accident.

The exception is :func:`real_time_limit`, for safety limits around I/O (connecting,
cancelling a query, cleanup after cancellation). Those must be measured in real time: under
the autojump clock a Trio deadline around a socket wait fires at once, because a task
blocked on a socket counts as idle.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import trio


class Clock:
    """Epoch time read from Trio's clock, anchored to the wall clock at construction."""

    __slots__ = ("_trio_at_anchor", "_wall_at_anchor")

    def __init__(self) -> None:
        self._wall_at_anchor = time.time()
        self._trio_at_anchor = trio.current_time()

    def now(self) -> float:
        """Seconds since the epoch, advancing with Trio's clock."""
        return self._wall_at_anchor + (trio.current_time() - self._trio_at_anchor)

    def now_ms(self) -> int:
        return int(self.now() * 1000)

    def trio_time_at(self, epoch_seconds: float) -> float:
        """The Trio clock reading at which ``now()`` will equal ``epoch_seconds``."""
        return self._trio_at_anchor + (epoch_seconds - self._wall_at_anchor)

    async def sleep_until(self, epoch_seconds: float) -> None:
        await trio.sleep_until(self.trio_time_at(epoch_seconds))


def wall_clock_now() -> float:
    """Real seconds since the epoch, for code that runs outside any Trio run (e.g. the CLI)."""
    return time.time()


def monotonic() -> float:
    """Real monotonic seconds, for measuring I/O safety limits and benchmarks."""
    return time.monotonic()


@contextmanager
def real_time_limit(seconds: float) -> Iterator[trio.CancelScope]:
    """Cancel the enclosed block after ``seconds`` of real time, whatever clock Trio runs on.

    A timer thread cancels the scope through the Trio token, so the limit holds under
    ``MockClock(autojump_threshold=0)`` too. Meant for rare paths (connect, cancel, cleanup):
    it costs a thread start.
    """
    scope = trio.CancelScope()
    token = trio.lowlevel.current_trio_token()

    def expire() -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(scope.cancel)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        with scope:
            yield scope
    finally:
        timer.cancel()


def autojumping() -> bool:
    """Whether the running Trio loop is driven by an autojumping ``trio.testing.MockClock``,
    which skips to the next deadline whenever every task waits — a task waiting for a
    worker thread included, so work handed to a thread would let virtual time run ahead
    of it. Must be called inside a Trio run; never blocks. (The engine's pacing asks the
    same, ``_engine.runtime.pacing.on_virtual_time``.)"""
    # trio.testing is looked up, not imported: a MockClock exists only once it was imported,
    # and importing it loads pytest where it is installed.
    testing = sys.modules.get("trio.testing")
    if testing is None:
        return False
    clock = trio.lowlevel.current_clock()
    return isinstance(clock, testing.MockClock) and clock.autojump_threshold != math.inf
