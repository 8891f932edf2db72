"""Application versions and stranded work: which versions exist, which is latest, and the
PENDING rows of executors that went silent.

Invariant: moving another executor's rows clears their owner token in the same write, so
that executor, if it still runs, loses the fence at its next write.
"""

from __future__ import annotations

from typing import Protocol

from dbos_trio._sysdb.records import ActiveCount, ApplicationVersion


class VersionStore(Protocol):
    """Application versions and stranded work (sql/versions.py)."""

    async def register_application_version(self, application_name: str, version: str) -> bool:
        """Record that ``version`` of the application runs; True if it is the latest."""

    async def latest_version(self, application_name: str) -> str | None: ...

    async def list_application_versions(
        self, application_name: str | None
    ) -> list[ApplicationVersion]:
        """Versions of the application and unclaimed ones (every one when None), newest
        first."""

    async def set_latest_version(self, version: str, application_name: str, now_ms: int) -> None:
        """Stamp ``version`` with ``now_ms`` (making it the latest), claiming it for the
        application if it was unclaimed, in one transaction. A version not registered, or
        registered by another application, raises
        :class:`~dbos_trio.errors.DBOSException` and writes nothing."""

    async def active_counts(self, application_name: str | None) -> list[ActiveCount]:
        """PENDING, ENQUEUED and DELAYED rows of the application and unclaimed ones (every
        application's when None), counted by version, status, executor and name."""

    async def reenqueue_executor(
        self,
        executor_id: str,
        application_version: str | None,
        application_name: str,
        now_ms: int,
        *,
        updated_before_ms: int | None = None,
    ) -> list[str]:
        """Put another executor's PENDING rows (of ``application_version``, or any version
        when None; this application's or unclaimed; last updated at or before
        ``updated_before_ms`` when given) back on their queue, clearing their owner token:
        one write, the ids moved. The owner's own execution, if it still runs, loses the
        fence at its next write."""

    async def touch_running(self, executor_id: str, workflow_ids: list[str], now_ms: int) -> int:
        """Stamp ``updated_at`` of those of ``workflow_ids`` still PENDING under
        ``executor_id``: the liveness an adopting executor reads. One write; the count."""

    async def silent_executors(
        self, application_name: str, executor_id: str, silent_before_ms: int
    ) -> list[str]:
        """Executors other than ``executor_id`` holding PENDING rows of the application (or
        unclaimed) none of which was updated after ``silent_before_ms``."""

    async def names_ever_run(self, names: list[str]) -> set[str]:
        """Of ``names``, those of which some row was ever dequeued or started (a scan:
        for diagnostics, never on a hot path)."""
