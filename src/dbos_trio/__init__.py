"""dbos_trio: DBOS durable workflows as a Trio structured-concurrency runtime.

Everything public is importable from here: ``from dbos_trio import DBOS, Config``. The errors
are also in :mod:`dbos_trio.errors`; test helpers in :mod:`dbos_trio.testing`; asyncio-only
libraries inside steps in :mod:`dbos_trio.aio`; the web dashboard in
:mod:`dbos_trio.dashboard`; the command line is the ``dbos-trio`` script
(:mod:`dbos_trio.cli`). Every other module is private (``_``-prefixed): its names may move
between releases. docs/architecture.md maps where each concern lives.
"""

# ruff: noqa: I001 — grouped by concern (as __all__), not alphabetically.
from dbos_trio import _moved

_moved.install()  # before anything can unpickle a row written under an older module path

# ruff: noqa: E402 — the imports below come after the finder is installed, on purpose.

# Launching an executor, and its configuration.
from dbos_trio._config import Config
from dbos_trio._dbos import DBOS

# Workflows and steps: options for the next start, handles, what is stored about them,
# and what a failure hook receives.
from dbos_trio._engine.workflows.handle import WorkflowHandle
from dbos_trio._engine.workflows.options import (
    SetEnqueueOptions,
    SetWorkflowAttributes,
    SetWorkflowID,
    SetWorkflowTimeout,
)
from dbos_trio._engine.workflows.status import StepInfo, WorkflowStatus
from dbos_trio._engine.workflows.step_status import StepStatus
from dbos_trio._engine.observability.failures import WorkflowFailure
from dbos_trio._registry import DBOSConfiguredInstance

# Durable primitives with an argument type of their own.
from dbos_trio._engine.durable.send_many import SendMessage

# Queues.
from dbos_trio._core.admission import RateLimit
from dbos_trio._engine.queues.bulk import EnqueueCall
from dbos_trio._queue import Queue

# Schedules and debouncing.
from dbos_trio._dbos import Debouncer
from dbos_trio._engine.schedules.definitions import (
    ClientScheduleInput,
    ScheduleInput,
    WorkflowSchedule,
)

# Reaching a system database from another process.
from dbos_trio._client import Client, ClientDebouncer, ClientWorkflowHandle, EnqueueOptions

# Listing, retention and versions.
from dbos_trio._core.filters import ListFilters
from dbos_trio._core.retention import RetentionPolicy
from dbos_trio._engine.admin.retention import GarbageCollection
from dbos_trio._sysdb.records import ApplicationVersion

# Transactions on the application's own database.
from dbos_trio._dbos import Datasource
from dbos_trio._datasource import TransactionConnection

# Payload formats.
from dbos_trio._payload_store import DirectoryPayloadStore, PayloadStore
from dbos_trio._serialization import (
    PickleSerializer,
    PortableJSONSerializer,
    Serializer,
    from_portable,
)

# Logs.
from dbos_trio._engine.observability.logs import (
    DBOSContextFilter,
    JSONFormatter,
    configure_logging,
    logger,
)

# Errors (also importable from dbos_trio.errors).
from dbos_trio.errors import (
    ConnectionLost,
    Contention,
    DatabaseClosed,
    DBOSArgumentTypeError,
    DBOSAwaitedWorkflowCancelledError,
    DBOSAwaitedWorkflowError,
    DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded,
    DBOSBaseException,
    DBOSConfigError,
    DBOSConflictingWorkflowError,
    DBOSCorruptRowError,
    DBOSDuplicateIDError,
    DBOSEnqueueManyError,
    DBOSException,
    DBOSInitializationError,
    DBOSInvalidArgumentError,
    DBOSMaxStepRetriesExceeded,
    DBOSNondeterminismError,
    DBOSNonExistentWorkflowError,
    DBOSNotLaunchedError,
    DBOSPayloadError,
    DBOSQueryTimeoutError,
    DBOSQueueDeduplicatedError,
    DBOSStepNondeterminismError,
    DBOSStepTimeoutError,
    DBOSStoredDataError,
    DBOSStreamTimeoutError,
    DBOSTimeoutError,
    DBOSUnexpectedStepError,
    DBOSUnorderedTaskError,
    DBOSValueTooLargeError,
    DBOSWorkflowAbortedError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
    DBOSWorkflowFunctionNotFoundError,
    DBOSWorkflowIDInUseError,
    InvalidValueError,
    PayloadStoreError,
    PortableValueError,
    PortableWorkflowError,
    SystemDatabaseError,
    SystemDatabaseUnreachable,
    TransactionOutcomeUnknown,
    TransientDatabaseError,
    UnexpectedDatabaseError,
)

from dbos_trio._exports import fixup_module_metadata

__all__ = [  # noqa: RUF022 — grouped by concern, as the imports above
    # launching
    "DBOS",
    "Config",
    # workflows and steps
    "DBOSConfiguredInstance",
    "SetEnqueueOptions",
    "SetWorkflowAttributes",
    "SetWorkflowID",
    "SetWorkflowTimeout",
    "StepInfo",
    "StepStatus",
    "WorkflowHandle",
    "WorkflowStatus",
    "WorkflowFailure",
    "SendMessage",
    # queues
    "Queue",
    "EnqueueCall",
    "RateLimit",
    # schedules and debouncing
    "ClientScheduleInput",
    "Debouncer",
    "ScheduleInput",
    "WorkflowSchedule",
    # another process
    "Client",
    "ClientDebouncer",
    "ClientWorkflowHandle",
    "EnqueueOptions",
    # listing, retention, versions
    "ApplicationVersion",
    "GarbageCollection",
    "ListFilters",
    "RetentionPolicy",
    # transactions
    "Datasource",
    "TransactionConnection",
    "TransactionOutcomeUnknown",
    # payload formats
    "DirectoryPayloadStore",
    "PayloadStore",
    "PickleSerializer",
    "PortableJSONSerializer",
    "PortableValueError",
    "Serializer",
    "from_portable",
    # logs
    "DBOSContextFilter",
    "JSONFormatter",
    "configure_logging",
    "logger",
    # errors
    "ConnectionLost",
    "Contention",
    "DBOSArgumentTypeError",
    "DBOSAwaitedWorkflowCancelledError",
    "DBOSAwaitedWorkflowError",
    "DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded",
    "DBOSBaseException",
    "DBOSConfigError",
    "DBOSConflictingWorkflowError",
    "DBOSCorruptRowError",
    "DBOSDuplicateIDError",
    "DBOSEnqueueManyError",
    "DBOSException",
    "DBOSInitializationError",
    "DBOSInvalidArgumentError",
    "DBOSMaxStepRetriesExceeded",
    "DBOSNonExistentWorkflowError",
    "DBOSNondeterminismError",
    "DBOSNotLaunchedError",
    "DBOSPayloadError",
    "DBOSQueryTimeoutError",
    "DBOSQueueDeduplicatedError",
    "DBOSStepNondeterminismError",
    "DBOSStepTimeoutError",
    "DBOSStoredDataError",
    "DBOSStreamTimeoutError",
    "DBOSTimeoutError",
    "DBOSUnexpectedStepError",
    "DBOSUnorderedTaskError",
    "DBOSValueTooLargeError",
    "DBOSWorkflowAbortedError",
    "DBOSWorkflowCancelledError",
    "DBOSWorkflowConflictIDError",
    "DBOSWorkflowFunctionNotFoundError",
    "DBOSWorkflowIDInUseError",
    "DatabaseClosed",
    "InvalidValueError",
    "PayloadStoreError",
    "PortableWorkflowError",
    "SystemDatabaseError",
    "SystemDatabaseUnreachable",
    "TransientDatabaseError",
    "UnexpectedDatabaseError",
]

fixup_module_metadata(__name__, globals(), __all__)
del fixup_module_metadata


def _installed_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("dbos-trio")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


# From the one place the version is written: pyproject.toml, through the installed metadata.
__version__ = _installed_version()
del _installed_version
