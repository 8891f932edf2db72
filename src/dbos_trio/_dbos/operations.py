"""Operations on a launched ``DBOS``: garbage collection and the global timeout.

Neither is checkpointed when called from a workflow body (neither has a cross-SDK step
name: the official SDK dropped both in 3.x): garbage collection deletes only rows no
workflow reads again, and cancelling what was created before a fixed time twice cancels
the same rows. Both act on this application's rows and unclaimed ones. Both are
:mod:`dbos_trio._ops.retention`'s, shared with ``Client``.
"""

from __future__ import annotations

from datetime import datetime

from dbos_trio._core.retention import DEFAULT_BATCH_SIZE
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._ops import retention
from dbos_trio._ops.retention import GarbageCollection, Progress


class Operations(DBOSBase):
    async def garbage_collect(
        self,
        *,
        completed_before: int | datetime | str | None = None,
        keep_newest: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Progress | None = None,
        jobs: int = 1,
    ) -> GarbageCollection:
        """Delete this application's finished workflows (SUCCESS, ERROR, CANCELLED,
        MAX_RECOVERY_ATTEMPTS_EXCEEDED) that finished before ``completed_before`` (epoch
        ms, a ``datetime`` or ISO 8601) or are older than its ``keep_newest`` newest
        workflows, with their inputs, outputs, steps, messages, events and streams;
        PENDING, ENQUEUED and DELAYED ones are never touched.

        Runs in batches of ``batch_size`` (one transaction each; ``progress(deleted)``
        after each), so running workflows are not blocked; ``jobs`` batches at a time
        (PostgreSQL; default 1). Cancellation stops between
        batches (what was deleted stays deleted); a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` likewise. A bad value raises
        :class:`~dbos_trio.DBOSInvalidArgumentError` before anything is deleted.
        """
        return await retention.garbage_collect(
            self._reach,
            completed_before=completed_before,
            keep_newest=keep_newest,
            batch_size=batch_size,
            progress=progress,
            jobs=jobs,
        )

    async def cancel_workflows_created_before(
        self, created_before: int | datetime | str
    ) -> list[str]:
        """Cancel every PENDING, ENQUEUED or DELAYED workflow of this application created
        before ``created_before`` (epoch ms, a ``datetime`` or ISO 8601): the official
        2.x ``global_timeout``. Returns the ids cancelled; one running here stops at once,
        elsewhere at its next checkpoint. Cancellation stops between batches of 1,000.
        """
        return await retention.cancel_workflows_created_before(self._reach, created_before)
