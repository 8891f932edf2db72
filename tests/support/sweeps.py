"""Observing background pacing: how often the timeout sweep asked an SQLite system database.

Under an autojumping clock the engine paces its background work every
``VIRTUAL_BACKGROUND_INTERVAL`` virtual seconds; paced every second, a virtual week would
be ~600,000 sweeps (and minutes of real time). Tests count the sweeps instead of timing the
run, so they say which mechanism ran, whatever the machine's load.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbos_trio._sysdb.sqlite.backend import SQLiteSystemDatabase
from dbos_trio.testing import VIRTUAL_BACKGROUND_INTERVAL


def count_timeout_sweeps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the timeout sweep's queries (one per tick) on every SQLite system database:
    ``ticks[0]`` is the count so far."""
    ticks = [0]
    original = SQLiteSystemDatabase.sweep_timeouts

    async def counted(self: SQLiteSystemDatabase, application_name: str, now_ms: int) -> Any:
        ticks[0] += 1
        return await original(self, application_name, now_ms)

    monkeypatch.setattr(SQLiteSystemDatabase, "sweep_timeouts", counted)
    return ticks


def most_ticks(span: float, launches: int = 1) -> int:
    """The most sweeps paced launches make in ``span`` virtual seconds: one per interval
    (with up to 10 % jitter early) and one at each launch."""
    return launches * (int(span / (VIRTUAL_BACKGROUND_INTERVAL * 0.9)) + 2)
