"""Aggregates of the workflow rows over time, for the dashboard's overview: work finished
per minute, latency ranks by workflow name, queue backlog and service, counts by status.

Invariant: read-only and bounded. Each method is one statement over a time window the
caller gives (or over the in-flight rows, which the in-flight indexes hold), so its cost
follows the window and the work still to run, never the size of the table's history.
The records it returns are raw aggregates; :mod:`dbos_trio._core.activity` turns them
into what a person reads (buckets, percentiles, findings).
"""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen(kw_only=True)
class MinuteCount:
    """Rows that reached ``status`` during the minute starting at ``minute * 60000`` ms."""

    minute: int
    status: str
    count: int


@attrs.frozen(kw_only=True)
class LatencyRank:
    """The ``position``-th fastest latency (ms, created to completed) of the ``total`` rows
    of workflow ``name`` in the sample of rows that succeeded or failed in the window."""

    name: str | None
    total: int
    position: int
    duration_ms: int


@attrs.frozen(kw_only=True)
class QueueActivity:
    """One queue's rows of one kind: ``ENQUEUED`` (``stamp_ms``: the oldest's creation),
    ``PENDING`` (the newest heartbeat stamp) or ``STARTED`` in the window (the newest
    start)."""

    queue_name: str
    kind: str
    count: int
    stamp_ms: int | None


@attrs.frozen(kw_only=True)
class StatusCount:
    status: str
    count: int


class ActivityStore(Protocol):
    """The dashboard's aggregates (read-only, bounded by the window given)."""

    async def finished_per_minute(self, since_ms: int, until_ms: int) -> list[MinuteCount]:
        """Rows that reached a final status in [since_ms, until_ms), by minute and status."""

    async def latency_ranks(
        self, since_ms: int, until_ms: int, sample: int, limit: int
    ) -> list[LatencyRank]:
        """The nearest-rank 50th/95th/99th percentile and slowest latencies of each workflow
        name among the latest ``sample`` rows finished (SUCCESS or ERROR) in the window; at
        most ``limit`` rows, busiest names first."""

    async def queue_activity(self, started_since_ms: int) -> list[QueueActivity]:
        """Every queue's ENQUEUED and PENDING rows, and its rows started since
        ``started_since_ms``."""

    async def status_counts(self) -> list[StatusCount]:
        """The rows still to run (ENQUEUED, PENDING, DELAYED), by status."""
