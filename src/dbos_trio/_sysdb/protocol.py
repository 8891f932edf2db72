"""The system-database protocol: what the engine may ask of a backend, and nothing more.

Invariant: no driver, row or SQL type appears in any signature. Records go in and come
out (``sysdb/records.py``), payloads cross as already-serialized strings, and operations
that must commit together with a step checkpoint take the caller's workflow id, step id
and ownership token and own the transaction. So the engine never holds a connection, a
second backend (SQLite) is a second implementation, and every write that could race with
another execution is fenced in the one place that can fence it.

The protocol is written in parts, one per concern (:mod:`dbos_trio._sysdb.interfaces`);
``SystemDatabase`` is their composition, and this module re-exports them, so the engine
imports from here whether it needs the whole or one part.

Error contract for methods that write on behalf of a running workflow (``owner_xid``):

* :class:`~dbos_trio.errors.DBOSWorkflowCancelledError` — the workflow is CANCELLED;
* :class:`~dbos_trio.errors.DBOSWorkflowConflictIDError` — another execution owns it now;
* :class:`~dbos_trio.errors.SystemDatabaseError` — the database failed; nothing is known
  to be written. All three are control for the engine, never a workflow outcome.
"""

from __future__ import annotations

from typing import Protocol

from dbos_trio._sysdb.interfaces.activity import ActivityStore
from dbos_trio._sysdb.interfaces.bundles import BundleStore
from dbos_trio._sysdb.interfaces.inspection import InspectionStore
from dbos_trio._sysdb.interfaces.lifecycle import BackendLifecycle, BackgroundTask
from dbos_trio._sysdb.interfaces.management import ManagementStore
from dbos_trio._sysdb.interfaces.messages import MessageStore
from dbos_trio._sysdb.interfaces.queues import QueueContention, QueueStore
from dbos_trio._sysdb.interfaces.schedules import ScheduleStore
from dbos_trio._sysdb.interfaces.versions import VersionStore
from dbos_trio._sysdb.interfaces.workflows import WorkflowStore


class SystemDatabase(
    BackendLifecycle,
    WorkflowStore,
    QueueStore,
    MessageStore,
    ScheduleStore,
    VersionStore,
    ManagementStore,
    InspectionStore,
    ActivityStore,
    BundleStore,
    Protocol,
):
    """A connected system database. Methods are safe to call from concurrent Trio tasks."""


__all__ = [
    "ActivityStore",
    "BackendLifecycle",
    "BackgroundTask",
    "BundleStore",
    "InspectionStore",
    "ManagementStore",
    "MessageStore",
    "QueueContention",
    "QueueStore",
    "ScheduleStore",
    "SystemDatabase",
    "VersionStore",
    "WorkflowStore",
]
