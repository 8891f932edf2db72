"""The shared implementation of the system-database protocol, for both backends.

:class:`SQLSystemDatabase` is the whole protocol written once over named statements
(:mod:`dbos_trio._sysdb.statements`), one mixin per concern. A backend subclasses it and
adds only what truly differs: its connection layer and statements, its atomic claim,
how it wakes other processes, and how it elects the timeout sweeper.
"""

from __future__ import annotations

from dbos_trio._sysdb.sql.activity import ActivityOperations
from dbos_trio._sysdb.sql.attributes import AttributeOperations
from dbos_trio._sysdb.sql.bulk import BulkOperations
from dbos_trio._sysdb.sql.bundles import BundleOperations
from dbos_trio._sysdb.sql.debounce import DebounceOperations
from dbos_trio._sysdb.sql.fencing import FencingOperations
from dbos_trio._sysdb.sql.inspection import InspectionOperations
from dbos_trio._sysdb.sql.management import ManagementOperations
from dbos_trio._sysdb.sql.messages import MessageOperations
from dbos_trio._sysdb.sql.observability import ObservabilityOperations
from dbos_trio._sysdb.sql.queues import QueueOperations
from dbos_trio._sysdb.sql.rename import RenameOperations
from dbos_trio._sysdb.sql.retention import RetentionOperations
from dbos_trio._sysdb.sql.rewind import RewindOperations
from dbos_trio._sysdb.sql.schedules import ScheduleOperations
from dbos_trio._sysdb.sql.versions import VersionOperations
from dbos_trio._sysdb.sql.workflows import WorkflowOperations


class SQLSystemDatabase(
    WorkflowOperations, ManagementOperations, QueueOperations, MessageOperations,
    ScheduleOperations, DebounceOperations, FencingOperations, InspectionOperations,
    VersionOperations, RenameOperations, ObservabilityOperations, RetentionOperations,
    AttributeOperations, RewindOperations, BulkOperations, ActivityOperations,
    BundleOperations,
):  # fmt: skip
    """The protocol over ``self._db``; see the mixins for each concern's invariants."""


__all__ = ["SQLSystemDatabase"]
