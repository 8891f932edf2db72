"""``Client.list_workflows`` and ``list_queued_workflows``, with the typed filters of
``DBOS``'s (:class:`~dbos_trio._core.filters.ListFilters`)."""

from __future__ import annotations

from typing import Unpack

from dbos_trio._client.management import ClientManagement, _client_filters
from dbos_trio._core.filters import ListFilters, queued
from dbos_trio._engine.workflows.status import WorkflowStatus, workflow_status


class ClientListing(ClientManagement):
    async def list_workflows(self, **filters: Unpack[ListFilters]) -> list[WorkflowStatus]:
        """Workflows matching every filter given, oldest first.

        Scoped like the official client: without an ``application_name`` filter, to the
        client's application plus unclaimed rows (every row for a nameless client, and for
        a lookup by ``workflow_ids``); with one, to that application plus unclaimed rows.

        A bad filter value raises :class:`~dbos_trio.DBOSInvalidArgumentError` (an unknown
        filter a ``TypeError``) before anything is read. One read: cancellation raises
        ``trio.Cancelled``; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        runtime = self._require("list_workflows")
        rows = await runtime.sysdb.list_workflows(_client_filters(runtime, dict(filters)))
        return [workflow_status(runtime.codec, row) for row in rows]

    async def list_queued_workflows(self, **filters: Unpack[ListFilters]) -> list[WorkflowStatus]:
        """Workflows on a queue (DELAYED, ENQUEUED or PENDING unless ``status`` is given)."""
        return await self.list_workflows(**queued(filters))
