"""Garbage collection and the global timeout, as methods of :class:`~dbos_trio.Client`.

The client's ``app_name`` scopes both (that application's rows and unclaimed ones); a
client for no application acts on every row of the schema. See
:mod:`dbos_trio._dbos.operations` for the semantics, which are the same.
"""

from __future__ import annotations

from datetime import datetime

from dbos_trio._client.base import ClientBase
from dbos_trio._core.filters import epoch_ms
from dbos_trio._core.retention import DEFAULT_BATCH_SIZE
from dbos_trio._engine.admin import retention
from dbos_trio._engine.admin.retention import GarbageCollection, Progress


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
        cutoff = (
            None if completed_before is None else epoch_ms(completed_before, "completed_before")
        )
        runtime = self._require("garbage_collect")
        return await retention.garbage_collect(
            runtime,
            completed_before_ms=cutoff,
            keep_newest=keep_newest,
            application_name=self._app_name,
            batch_size=batch_size,
            progress=progress,
            jobs=jobs,
        )

    async def cancel_workflows_created_before(
        self, created_before: int | datetime | str
    ) -> list[str]:
        """Cancel every active workflow created before ``created_before``; as
        :meth:`dbos_trio.DBOS.cancel_workflows_created_before`."""
        cutoff = epoch_ms(created_before, "created_before")
        runtime = self._require("cancel_workflows_created_before")
        return await retention.cancel_created_before(
            runtime, cutoff, application_name=self._app_name
        )
