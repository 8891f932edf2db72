"""``Client.list_workflows`` and ``list_queued_workflows`` with the ``dbos`` 3.4 filters
as typed keyword parameters (see :mod:`dbos_trio._dbos.listing` for their meaning)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..engine.status import WorkflowStatus, workflow_status
from .management import ClientManagement, _client_filters

Many = str | Sequence[str] | None
When = str | datetime | int | None
QUEUED_STATUSES = ["DELAYED", "ENQUEUED", "PENDING"]


class ClientListing(ClientManagement):
    async def list_workflows(
        self,
        *,
        workflow_ids: Sequence[str] | None = None,
        status: Many = None,
        name: Many = None,
        app_version: Many = None,
        forked_from: Many = None,
        parent_workflow_id: Many = None,
        user: Many = None,
        queue_name: Many = None,
        executor_id: Many = None,
        schedule_name: Many = None,
        application_name: Many = None,
        workflow_id_prefix: str | None = None,
        start_time: When = None,
        end_time: When = None,
        completed_after: When = None,
        completed_before: When = None,
        dequeued_after: When = None,
        dequeued_before: When = None,
        limit: int | None = None,
        offset: int | None = None,
        sort_desc: bool = False,
        load_input: bool = True,
        load_output: bool = True,
        queues_only: bool = False,
        was_forked_from: bool | None = None,
        is_fork: bool | None = None,
        has_parent: bool | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> list[WorkflowStatus]:
        """Workflows matching every filter given, oldest first.

        Scoped like the official client: without an ``application_name`` filter, to the
        client's application plus unclaimed rows (every row for a nameless client, and for
        a lookup by ``workflow_ids``); with one, to that application plus unclaimed rows.

        A bad filter value raises :class:`~dbos_trio.DBOSInvalidArgumentError` (an unknown
        one ``TypeError``) before anything is read. One read: cancellation raises
        ``trio.Cancelled``; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries.
        """
        filters = {key: value for key, value in locals().items() if key != "self"}
        runtime = self._require("list_workflows")
        rows = await runtime.sysdb.list_workflows(_client_filters(runtime, filters))
        return [workflow_status(runtime.codec, row) for row in rows]

    async def list_queued_workflows(
        self,
        *,
        workflow_ids: Sequence[str] | None = None,
        status: Many = None,
        name: Many = None,
        app_version: Many = None,
        forked_from: Many = None,
        parent_workflow_id: Many = None,
        user: Many = None,
        queue_name: Many = None,
        executor_id: Many = None,
        schedule_name: Many = None,
        application_name: Many = None,
        workflow_id_prefix: str | None = None,
        start_time: When = None,
        end_time: When = None,
        completed_after: When = None,
        completed_before: When = None,
        dequeued_after: When = None,
        dequeued_before: When = None,
        limit: int | None = None,
        offset: int | None = None,
        sort_desc: bool = False,
        load_input: bool = True,
        load_output: bool = True,
        was_forked_from: bool | None = None,
        is_fork: bool | None = None,
        has_parent: bool | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> list[WorkflowStatus]:
        """Workflows on a queue (DELAYED, ENQUEUED or PENDING unless ``status`` is given)."""
        filters = {key: value for key, value in locals().items() if key != "self"}
        if not filters.get("status"):
            filters["status"] = QUEUED_STATUSES
        filters["queues_only"] = True
        return await self.list_workflows(**filters)
