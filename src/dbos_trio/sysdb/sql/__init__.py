"""The shared implementation of the system-database protocol, for both backends.

:class:`SQLSystemDatabase` is the whole protocol written once over named statements
(:mod:`dbos_trio.sysdb.statements`), one mixin per concern. A backend subclasses it and
adds only what truly differs: its connection layer and statements, its atomic claim,
how it wakes other processes, and how it elects the timeout sweeper.
"""

from __future__ import annotations

from .debounce import DebounceOperations
from .fencing import FencingOperations
from .inspection import InspectionOperations
from .management import ManagementOperations
from .messages import MessageOperations
from .observability import ObservabilityOperations
from .queues import QueueOperations
from .rename import RenameOperations
from .retention import RetentionOperations
from .schedules import ScheduleOperations
from .versions import VersionOperations
from .workflows import WorkflowOperations


class SQLSystemDatabase(
    WorkflowOperations, ManagementOperations, QueueOperations, MessageOperations,
    ScheduleOperations, DebounceOperations, FencingOperations, InspectionOperations,
    VersionOperations, RenameOperations, ObservabilityOperations, RetentionOperations,
):  # fmt: skip
    """The protocol over ``self._db``; see the mixins for each concern's invariants."""


__all__ = ["SQLSystemDatabase"]
