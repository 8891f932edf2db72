"""``list_workflows`` and ``list_queued_workflows`` on ``DBOS``, with the ``dbos`` 3.4
filters as typed keywords (:class:`~dbos_trio._core.filters.ListFilters`), so an IDE and mypy
see every one of them; the Client's take the same ones.

Values are checked at the call (:mod:`dbos_trio._core.filters`), before anything is read,
by the shared operations (:mod:`dbos_trio._ops.inspect`); ``DBOS`` lists its own
application's rows and unclaimed ones.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Unpack

from dbos_trio._core.filters import ListFilters
from dbos_trio._dbos.management import Management
from dbos_trio._engine.workflows.status import WorkflowStatus
from dbos_trio._ops import inspect


class Listing(Management):
    def list_workflows(
        self, **filters: Unpack[ListFilters]
    ) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        """This application's workflows (and unclaimed ones) matching every filter given
        (:class:`~dbos_trio._core.filters.ListFilters`), oldest first (``sort_desc``: newest
        first). ``attributes`` keeps the workflows whose attributes contain the given keys
        and values (JSONB containment on PostgreSQL; see docs/surface.md for SQLite). From a
        workflow body the answer is checkpointed as ``DBOS.listWorkflows``. A bad filter
        value raises :class:`~dbos_trio.DBOSInvalidArgumentError` (an unknown filter a
        ``TypeError``) at the call, before anything is read. Cancellation raises
        ``trio.Cancelled`` and records nothing; a database failure raises
        :class:`~dbos_trio.SystemDatabaseError` after the retries."""
        return inspect.list_workflows(self._reach, filters, own_application=True)

    def list_queued_workflows(
        self, **filters: Unpack[ListFilters]
    ) -> Coroutine[Any, Any, list[WorkflowStatus]]:
        """Workflows on a queue — DELAYED, ENQUEUED or PENDING unless ``status`` says
        otherwise — with the filters of :meth:`list_workflows`; checkpointed as
        ``DBOS.listQueuedWorkflows`` from a workflow body."""
        return inspect.list_queued_workflows(self._reach, filters, own_application=True)
