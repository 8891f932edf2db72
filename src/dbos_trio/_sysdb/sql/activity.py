"""The dashboard's aggregates over time (see :mod:`dbos_trio._sysdb.interfaces.activity`).

Invariant: each call is one read-only statement of ``queries/activity.sql``, bounded by
the caller's window or by the in-flight indexes; nothing locks or writes.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.interfaces.activity import (
    LatencyRank,
    MinuteCount,
    QueueActivity,
    StatusCount,
)
from dbos_trio._sysdb.sql.base import SQLBackendBase


def _whole(value: Any) -> int | None:
    # PostgreSQL's bigint arithmetic and SQLite's integers arrive as int; a NUMERIC
    # aggregate (Decimal) or a float written by hand is rounded to a whole millisecond.
    return None if value is None else int(value)


class ActivityOperations(SQLBackendBase):
    async def finished_per_minute(self, since_ms: int, until_ms: int) -> list[MinuteCount]:
        rows = await self._db.all(
            "finished_per_minute", {"since_ms": since_ms, "until_ms": until_ms}
        )
        return [MinuteCount(minute=int(r[0]), status=r[1], count=int(r[2])) for r in rows]

    async def latency_ranks(
        self, since_ms: int, until_ms: int, sample: int, limit: int
    ) -> list[LatencyRank]:
        rows = await self._db.all(
            "latency_ranks",
            {"since_ms": since_ms, "until_ms": until_ms, "sample": sample, "limit": limit},
        )
        return [
            LatencyRank(
                name=r[0], total=int(r[1]), position=int(r[2]), duration_ms=_whole(r[3]) or 0
            )
            for r in rows
        ]

    async def queue_activity(self, started_since_ms: int) -> list[QueueActivity]:
        rows = await self._db.all("queue_activity", {"since_ms": started_since_ms})
        return [
            QueueActivity(queue_name=r[0], kind=r[1], count=int(r[2]), stamp_ms=_whole(r[3]))
            for r in rows
        ]

    async def status_counts(self) -> list[StatusCount]:
        rows = await self._db.all("status_counts", {})
        return [StatusCount(status=r[0], count=int(r[1])) for r in rows]
