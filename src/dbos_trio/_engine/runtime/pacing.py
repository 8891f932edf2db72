"""How often a launch's background work wakes, chosen from the clock it runs on.

Invariant: a launch on an autojumping ``trio.testing.MockClock`` with an SQLite system
database spaces its background work (dequeue supervisor, timeout, orphan and cancel
sweeps, queue polling, SQLite waiters' re-checks) :data:`VIRTUAL_BACKGROUND_INTERVAL`
virtual seconds apart, whether it was opened by ``dbos.launched()`` or by
``dbos_trio.testing.launched``. Why: under the autojump clock real time is spent per
wakeup, not per virtual second, so a one-second sweep makes a simulated week cost
millions of wakeups (minutes of CPU) although nothing happens in them. Work this
process does wakes its waiters at once either way; only what a poll alone notices
(a DELAYED workflow coming due, a deadline of a queued workflow, work of another
process) may be noticed up to that much *virtual* time late.

PostgreSQL keeps the engine's own timing: an autojumping clock cannot drive it (a task
waiting on a socket counts as idle), which the testing kit refuses outright.
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from trio.testing import MockClock

VIRTUAL_BACKGROUND_INTERVAL = 300.0
"""Seconds of virtual time between background sweeps when a launch runs on a MockClock."""


def on_virtual_time() -> bool:
    """Whether the running Trio loop is driven by an autojumping ``trio.testing.MockClock``
    (one that skips to the next deadline whenever every task waits).

    Must be called inside a Trio run (``RuntimeError`` otherwise); never blocks.
    """
    clock = trio.lowlevel.current_clock()
    # A MockClock can only exist once trio.testing was imported, so look it up instead of
    # importing it here: trio.testing imports pytest where it is installed (a quarter of
    # a second of every application's import).
    testing = sys.modules.get("trio.testing")
    if testing is None:
        return False
    mock_clock: type[MockClock] = testing.MockClock
    return isinstance(clock, mock_clock) and clock.autojump_threshold != math.inf


def default_background_interval(database_url: str) -> float | None:
    """The background interval for a launch nobody paced explicitly: virtual pacing on an
    autojumping clock with SQLite, else ``None`` (the engine's own one-second timing)."""
    if database_url.startswith("sqlite:") and on_virtual_time():
        return VIRTUAL_BACKGROUND_INTERVAL
    return None
