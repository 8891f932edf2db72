"""``Client.list_workflows`` and ``list_queued_workflows``, with the typed filters of
``DBOS``'s (:class:`~dbos_trio._core.filters.ListFilters`), scoped as the official
client scopes them (:func:`dbos_trio._ops.inspect.scoped`)."""

from __future__ import annotations

from typing import Unpack

from dbos_trio._client.management import ClientManagement
from dbos_trio._core.filters import ListFilters
from dbos_trio._engine.workflows.status import WorkflowStatus
from dbos_trio._ops import inspect


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
        return await inspect.list_workflows(self._reach, filters)

    async def list_queued_workflows(self, **filters: Unpack[ListFilters]) -> list[WorkflowStatus]:
        """Workflows on a queue (DELAYED, ENQUEUED or PENDING unless ``status`` is given)."""
        return await inspect.list_queued_workflows(self._reach, filters)
