"""Queues and recovery: queue rows, claiming ENQUEUED work, putting abandoned work back.

Invariant: a row moves between ENQUEUED, DELAYED and PENDING only through these calls, each
one statement or transaction, so two executors never both own a row.
"""

from __future__ import annotations

from typing import Protocol

from dbos_trio._core.admission import QueueConfig
from dbos_trio._sysdb.records import ClaimedWorkflow, ClaimRequest


class QueueContention(Exception):
    """A claim collided with another executor's (lock or serialization conflict).

    Not an error: a busy peer. The worker backs off and polls again.
    """


class QueueStore(Protocol):
    """Queue configuration, dequeueing, and re-enqueueing work nobody runs."""

    async def upsert_queue(self, config: QueueConfig, *, overwrite: bool) -> None:
        """Create the queue row, or update it when ``overwrite``; a name owned by another
        application raises :class:`~dbos_trio.errors.DBOSException`."""

    async def list_queues(self, application_name: str | None) -> list[QueueConfig]:
        """Queues of this application and unclaimed ones (all queues when None)."""

    async def get_queue(self, name: str) -> QueueConfig | None: ...

    async def delete_queue(self, name: str) -> bool: ...

    async def pause_queue(self, name: str, now_ms: int) -> bool:
        """Stop every executor's claims from the queue (its global concurrency stored as
        0 or below, the old limit kept); False if there is no such row or it is paused."""

    async def unpause_queue(self, name: str, now_ms: int) -> bool:
        """Restore the queue's global concurrency and wake its workers; False if there is
        no such row or it is not paused."""

    async def find_deduplicated(self, queue_name: str, deduplication_id: str) -> str | None:
        """The id of the active workflow holding ``deduplication_id`` on the queue."""

    async def release_delayed(self, application_name: str, now_ms: int) -> int:
        """DELAYED rows whose delay has passed become ENQUEUED; the count moved."""

    async def rate_window_reopens(
        self, queue_name: str, application_name: str, limit: int, period_ms: int, now_ms: int
    ) -> int | None:
        """When (epoch ms) the queue's rate limit (``limit`` starts per ``period_ms``)
        admits the next start, counted as the claim counts; None while it is not full."""

    async def next_delayed_due(self, application_name: str) -> int | None:
        """When (epoch ms) the application's (or an unclaimed) DELAYED row comes due
        first; None when there is none (a row without a time is left out: every release
        takes it)."""

    async def list_partitions(self, queue_name: str) -> list[str]:
        """Distinct partition keys with ENQUEUED rows on the queue."""

    async def claim(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        """Flip up to the allowed number of ENQUEUED rows to PENDING for this executor.

        Counts the attempt (``recovery_attempts + 1``), stamps executor, version, application,
        start time and ``rate_limited``, and sets the deadline from ``workflow_timeout_ms``.
        Returns them in dequeue order (priority, then age). Raises :class:`QueueContention`
        when another executor holds the rows.
        """

    async def request_turn(self, request: ClaimRequest) -> bool:
        """Mark the head of the queue as the next turn of this executor, whose claim
        found the queue's global limit spent by others; True if a turn was marked or
        renewed. Other executors' claims then keep to a fair share of the limit until the
        turn is taken (or ``turn_window_ms`` passes).
        A backend without turn-taking returns False."""

    # --- recovery -------------------------------------------------------------------------

    async def reenqueue_abandoned(
        self, executor_id: str, application_version: str, application_name: str, now_ms: int
    ) -> int:
        """Put this executor's PENDING rows back on their queue (or the internal queue).

        One write; the count of rows re-enqueued. Only rows of this executor id and
        application version, owned by this application or unclaimed.
        """

    async def requeue_workflow(self, workflow_id: str, owner_xid: str, now_ms: int) -> bool:
        """Put a PENDING workflow its owner cannot finish back on its queue (or the internal
        queue); False if it is no longer PENDING and owned by ``owner_xid``."""

    async def pending_of_executor(
        self,
        executor_id: str,
        application_version: str,
        application_name: str,
        updated_before_ms: int,
    ) -> list[tuple[str, str]]:
        """(workflow id, owner token) of the executor's PENDING rows (this application's
        or unclaimed) last updated at or before ``updated_before_ms``."""

    async def dead_letter(self, workflow_id: str, observed_attempts: int, now_ms: int) -> bool:
        """Park a PENDING row as MAX_RECOVERY_ATTEMPTS_EXCEEDED; False if it changed meanwhile."""
