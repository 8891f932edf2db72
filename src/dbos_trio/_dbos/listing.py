"""``list_workflows`` and ``list_queued_workflows`` with the ``dbos`` 3.4 filters spelled
out as typed keyword parameters, so an IDE and mypy see every one of them.

Each filter left None does not narrow the listing; a ``str | Sequence[str]`` filter
matches any of its values; times take ISO 8601 strings (as dbos 3.4), ``datetime``\\ s or
epoch milliseconds. Values are checked at the call (:mod:`dbos_trio.core.filters`).
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from datetime import datetime
from typing import Any

from ..engine.status import WorkflowStatus
from .management import Management

Many = str | Sequence[str] | None
When = str | datetime | int | None
QUEUED_STATUSES = ["DELAYED", "ENQUEUED", "PENDING"]


class Listing(Management):
    def list_workflows(
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
    ) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        """This application's workflows (and unclaimed ones) matching every filter given,
        oldest first (``sort_desc``: newest first). ``attributes`` keeps the workflows
        whose attributes contain the given keys and values (JSONB containment on
        PostgreSQL; see docs/surface.md for SQLite). From a workflow body the answer is
        checkpointed as ``DBOS.listWorkflows``. A bad filter value raises
        :class:`~dbos_trio.DBOSInvalidArgumentError` (an unknown one ``TypeError``) at the
        call, before anything is read. Cancellation raises ``trio.Cancelled`` and records
        nothing; a database failure raises :class:`~dbos_trio.SystemDatabaseError` after
        the retries."""
        filters = {key: value for key, value in locals().items() if key != "self"}
        return self._list_workflows("list_workflows", "DBOS.listWorkflows", filters)

    def list_queued_workflows(
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
    ) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        """Workflows on a queue — DELAYED, ENQUEUED or PENDING unless ``status`` says
        otherwise — with the filters of :meth:`list_workflows`; checkpointed as
        ``DBOS.listQueuedWorkflows`` from a workflow body."""
        filters = {key: value for key, value in locals().items() if key != "self"}
        if not filters.get("status"):
            filters["status"] = QUEUED_STATUSES
        filters["queues_only"] = True
        return self._list_workflows("list_queued_workflows", "DBOS.listQueuedWorkflows", filters)
