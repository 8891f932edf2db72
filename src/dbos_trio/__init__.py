"""dbos_trio: DBOS durable workflows as a Trio structured-concurrency runtime.

Everything public is importable from here: ``from dbos_trio import DBOS, Config``.
"""

from ._config import Config
from ._dbos import DBOS, Datasource
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
    DBOSQueueDeduplicatedError,
    DBOSStepNondeterminismError,
    DBOSStepTimeoutError,
    DBOSUnexpectedStepError,
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
from .client import Client, ClientWorkflowHandle, EnqueueOptions
from .core.admission import RateLimit
from .datasource import TransactionConnection
from .datasource.protocol import TransactionOutcomeUnknown
from .engine.handle import WorkflowHandle
from .engine.options import SetEnqueueOptions, SetWorkflowID, SetWorkflowTimeout
from .engine.status import StepInfo, WorkflowStatus

__all__ = [
    "DBOS",
    "Client",
    "ClientWorkflowHandle",
    "Config",
    "DBOSArgumentTypeError",
    "DBOSAwaitedWorkflowCancelledError",
    "DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded",
    "DBOSBaseException",
    "DBOSConfigError",
    "DBOSConfiguredInstance",
    "DBOSConflictingWorkflowError",
    "DBOSCorruptRowError",
    "DBOSException",
    "DBOSInitializationError",
    "DBOSInvalidArgumentError",
    "DBOSMaxStepRetriesExceeded",
    "DBOSNonExistentWorkflowError",
    "DBOSNotLaunchedError",
    "DBOSPayloadError",
    "DBOSQueueDeduplicatedError",
    "DBOSStepNondeterminismError",
    "DBOSStepTimeoutError",
    "DBOSUnexpectedStepError",
    "DBOSWorkflowAbortedError",
    "DBOSWorkflowCancelledError",
    "DBOSWorkflowConflictIDError",
    "DBOSWorkflowFunctionNotFoundError",
    "DBOSWorkflowIDInUseError",
    "Datasource",
    "EnqueueOptions",
    "PickleSerializer",
    "PortableJSONSerializer",
    "PortableWorkflowError",
    "Queue",
    "RateLimit",
    "Serializer",
    "SetEnqueueOptions",
    "SetWorkflowID",
    "SetWorkflowTimeout",
    "StepInfo",
    "SystemDatabaseError",
    "TransactionConnection",
    "TransactionOutcomeUnknown",
    "WorkflowHandle",
    "WorkflowStatus",
]
