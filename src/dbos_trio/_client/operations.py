"""Garbage collection and the global timeout, as methods of :class:`~dbos_trio.Client`.

The client's ``app_name`` scopes both (that application's rows and unclaimed ones); a
client for no application acts on every row of the schema. See
:mod:`dbos_trio._ops.retention`, which both faces call, for the semantics.
"""

from __future__ import annotations

from datetime import datetime

from dbos_trio._client.base import ClientBase
from dbos_trio._core.retention import DEFAULT_BATCH_SIZE
from dbos_trio._ops import retention
from dbos_trio._ops.retention import GarbageCollection, Progress


class ClientOperations(ClientBase):
    async def garbage_collect(
        self,
        *,
        completed_before: int | datetime | str | None = None,
        keep_newest: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Progress | None = None,
        jobs: int = 1,
    ) -> GarbageCollection:
        """Delete finished workflows, in batches; as :meth:`dbos_trio.DBOS.garbage_collect`."""
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
        """Cancel every active workflow created before ``created_before``; as
        :meth:`dbos_trio.DBOS.cancel_workflows_created_before`."""
        return await retention.cancel_workflows_created_before(self._reach, created_before)
