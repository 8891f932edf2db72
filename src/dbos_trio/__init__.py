"""dbos_trio: DBOS durable workflows as a Trio structured-concurrency runtime.

Everything public is importable from here: ``from dbos_trio import DBOS, Config``.
"""

from ._config import Config
from ._dbos import DBOS, Datasource, Debouncer
from ._errors import (
    DBOSArgumentTypeError,
    DBOSAwaitedWorkflowCancelledError,
    DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded,
    DBOSBaseException,
    DBOSConfigError,
    DBOSConflictingWorkflowError,
    DBOSCorruptRowError,
    DBOSException,
    DBOSInitializationError,
    DBOSInvalidArgumentError,
    DBOSMaxStepRetriesExceeded,
    DBOSNonExistentWorkflowError,
    DBOSNotLaunchedError,
    DBOSPayloadError,
    DBOSQueryTimeoutError,
    DBOSQueueDeduplicatedError,
    DBOSStepNondeterminismError,
    DBOSStepTimeoutError,
    DBOSStreamTimeoutError,
    DBOSUnexpectedStepError,
    DBOSUnorderedTaskError,
    DBOSWorkflowAbortedError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
    DBOSWorkflowFunctionNotFoundError,
    DBOSWorkflowIDInUseError,
    PortableWorkflowError,
    SystemDatabaseError,
)
from ._queue import Queue
from ._registry import DBOSConfiguredInstance
from ._serialization import PickleSerializer, PortableJSONSerializer, Serializer
from .client import Client, ClientDebouncer, ClientWorkflowHandle, EnqueueOptions
from .core.admission import RateLimit
from .core.retention import RetentionPolicy
from .datasource import TransactionConnection
from .datasource.protocol import TransactionOutcomeUnknown
from .engine.handle import WorkflowHandle
from .engine.logcontext import DBOSContextFilter, JSONFormatter, configure_logging, logger
from .engine.options import SetEnqueueOptions, SetWorkflowID, SetWorkflowTimeout
from .engine.retention import GarbageCollection
from .engine.schedules import ClientScheduleInput, ScheduleInput, WorkflowSchedule
from .engine.status import StepInfo, WorkflowStatus
from .sysdb.records import ApplicationVersion

__all__ = [
    "DBOS",
    "ApplicationVersion",
    "Client",
    "ClientDebouncer",
    "ClientScheduleInput",
    "ClientWorkflowHandle",
    "Config",
    "DBOSArgumentTypeError",
    "DBOSAwaitedWorkflowCancelledError",
    "DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded",
    "DBOSBaseException",
    "DBOSConfigError",
    "DBOSConfiguredInstance",
    "DBOSConflictingWorkflowError",
    "DBOSContextFilter",
    "DBOSCorruptRowError",
    "DBOSException",
    "DBOSInitializationError",
    "DBOSInvalidArgumentError",
    "DBOSMaxStepRetriesExceeded",
    "DBOSNonExistentWorkflowError",
    "DBOSNotLaunchedError",
    "DBOSPayloadError",
    "DBOSQueryTimeoutError",
    "DBOSQueueDeduplicatedError",
    "DBOSStepNondeterminismError",
    "DBOSStepTimeoutError",
    "DBOSStreamTimeoutError",
    "DBOSUnexpectedStepError",
    "DBOSUnorderedTaskError",
    "DBOSWorkflowAbortedError",
    "DBOSWorkflowCancelledError",
    "DBOSWorkflowConflictIDError",
    "DBOSWorkflowFunctionNotFoundError",
    "DBOSWorkflowIDInUseError",
    "Datasource",
    "Debouncer",
    "EnqueueOptions",
    "GarbageCollection",
    "JSONFormatter",
    "PickleSerializer",
    "PortableJSONSerializer",
    "PortableWorkflowError",
    "Queue",
    "RateLimit",
    "RetentionPolicy",
    "ScheduleInput",
    "Serializer",
    "SetEnqueueOptions",
    "SetWorkflowID",
    "SetWorkflowTimeout",
    "StepInfo",
    "SystemDatabaseError",
    "TransactionConnection",
    "TransactionOutcomeUnknown",
    "WorkflowHandle",
    "WorkflowSchedule",
    "WorkflowStatus",
    "configure_logging",
    "logger",
]
