"""Errors, with the codes and messages of the official ``dbos`` 3.4 package, by family.

Two roots, and why they differ:

* :class:`DBOSException` (an ``Exception``) for conditions user code may handle: a bad
  argument, a conflicting workflow id, an awaited workflow that was cancelled. Every one
  pickles and unpickles to an equal error (``__reduce__``), because errors are stored as
  workflow and step outcomes and re-raised on replay.
* :class:`DBOSBaseException` (a ``BaseException``, like ``trio.Cancelled``) for control
  flow user code must not swallow: the running workflow was cancelled
  (:class:`DBOSWorkflowCancelledError`), or this execution lost ownership of it
  (:class:`DBOSWorkflowConflictIDError`). The engine never records these as an outcome:
  the row stays as its new owner or the canceller left it. User code cannot construct
  them (calling the class raises ``TypeError``; the engine uses ``_create``), so a raise
  of one always means the engine said so, never a library imitating it.

Families: a parent per kind of trouble, so a caller catches the kind without listing its
members. Each member keeps its class name, ``dbos_error_code`` and message (the names
and codes of dbos 3.4, where it has the class); a parent adds no code and no message of
its own, and is never raised itself:

* :class:`DBOSInvalidArgumentError` (a ``ValueError``) — an argument was refused, before
  anything was written: by a rule (itself), by type (:class:`DBOSArgumentTypeError`, also
  a ``TypeError``), or by the database (:class:`InvalidValueError`).
* :class:`DBOSTimeoutError` — something took longer than the time it was given:
  :class:`DBOSStepTimeoutError`, :class:`DBOSStreamTimeoutError`,
  :class:`DBOSQueryTimeoutError`.
* :class:`DBOSDuplicateIDError` — an id (a workflow id, a deduplication id) is already
  held, and nothing new was started: :class:`DBOSConflictingWorkflowError`,
  :class:`DBOSWorkflowIDInUseError`, :class:`DBOSQueueDeduplicatedError`. Not
  :class:`DBOSWorkflowConflictIDError`: despite its name it is control flow (above).
* :class:`DBOSNondeterminismError` — a workflow's durable calls did not replay as
  recorded, or could not be numbered deterministically: :class:`DBOSUnexpectedStepError`,
  :class:`DBOSStepNondeterminismError`, :class:`DBOSUnorderedTaskError`.
* :class:`DBOSStoredDataError` — what the system database holds cannot be read back:
  :class:`DBOSPayloadError` (a payload), :class:`DBOSCorruptRowError` (a row).
* :class:`DBOSAwaitedWorkflowError` — an awaited workflow ended without an outcome of its
  own: :class:`DBOSAwaitedWorkflowCancelledError`,
  :class:`DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded`.
* :class:`SystemDatabaseError` — the system database failed; never a workflow's outcome
  by itself. :class:`TransientDatabaseError` (:class:`ConnectionLost`,
  :class:`Contention`) once the retries ran out, :class:`DatabaseClosed`,
  :class:`UnexpectedDatabaseError`, :class:`DBOSQueryTimeoutError`.
* :class:`DBOSInitializationError` — nothing was started: :class:`DBOSConfigError`,
  :class:`SystemDatabaseUnreachable`.

* :class:`PayloadStoreError` — a payload store entry is missing, corrupt or cannot be
  written (a plain ``Exception``: readers meet it as the cause of a ``DBOSPayloadError``).

Every public error class is importable from here (and from ``dbos_trio``). The classes are
defined below this module, by concern, so that the tree spans modules without an import
cycle and no module outgrows one concern: the roots and family parents in
``dbos_trio._core.error_roots``, the database kinds in ``dbos_trio._core.database_errors``,
the refusals of a call in ``dbos_trio._core.call_errors``, the errors of running and
awaiting workflows in ``dbos_trio._core.execution_errors`` and those of stored values in
``dbos_trio._core.stored_errors``. The package root rewrites each class's ``__module__`` to
``dbos_trio``, so no user sees those paths. ``dbos_trio._sysdb.errors`` (which maps driver
errors onto the kinds) and ``dbos_trio._datasource.protocol`` re-export the database kinds,
so rows pickled under those paths still decode, to these classes.
"""

from __future__ import annotations

from dbos_trio._core.call_errors import (
    DBOSArgumentTypeError,
    DBOSConfigError,
    DBOSConflictingWorkflowError,
    DBOSEnqueueManyError,
    DBOSNonExistentWorkflowError,
    DBOSNotLaunchedError,
    DBOSQueueDeduplicatedError,
    DBOSValueTooLargeError,
    DBOSWorkflowIDInUseError,
    PortableValueError,
)
from dbos_trio._core.database_errors import (
    ConnectionLost,
    Contention,
    DatabaseClosed,
    DBOSQueryTimeoutError,
    InvalidValueError,
    SystemDatabaseUnreachable,
    TransactionOutcomeUnknown,
    TransientDatabaseError,
    UnexpectedDatabaseError,
)
from dbos_trio._core.error_roots import (
    DBOSAwaitedWorkflowError,
    DBOSBaseException,
    DBOSDuplicateIDError,
    DBOSException,
    DBOSInitializationError,
    DBOSInvalidArgumentError,
    DBOSNondeterminismError,
    DBOSStoredDataError,
    DBOSTimeoutError,
    SystemDatabaseError,
)
from dbos_trio._core.error_roots import _rebuild as _rebuild  # named by stored pickles
from dbos_trio._core.execution_errors import (
    DBOSAwaitedWorkflowCancelledError,
    DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded,
    DBOSMaxStepRetriesExceeded,
    DBOSStepNondeterminismError,
    DBOSStepTimeoutError,
    DBOSStreamTimeoutError,
    DBOSUnexpectedStepError,
    DBOSUnorderedTaskError,
    DBOSWorkflowAbortedError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
    DBOSWorkflowFunctionNotFoundError,
)
from dbos_trio._core.stored_errors import (
    DBOSCorruptRowError,
    DBOSPayloadError,
    PayloadStoreError,
    PortableWorkflowError,
)

__all__ = [
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
    "PortableValueError",
    "PortableWorkflowError",
    "SystemDatabaseError",
    "SystemDatabaseUnreachable",
    "TransactionOutcomeUnknown",
    "TransientDatabaseError",
    "UnexpectedDatabaseError",
]
