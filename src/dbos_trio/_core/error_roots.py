"""The roots and the families of the error tree, below :mod:`dbos_trio.errors`.

:mod:`dbos_trio.errors` is the public home of every error class and documents the tree;
the classes the rest of it derives from are defined here so that the tree can span more
than one module (this one, :mod:`.database_errors`, ``errors``) without an import cycle:
everything here imports nothing of dbos_trio, and ``errors`` re-exports it all. The
package root rewrites each class's ``__module__`` to ``dbos_trio``, so no user sees this
path; ``_rebuild`` reports ``dbos_trio.errors``, the path stored pickles already name.

Invariants: a family parent adds no ``__init__``, code or message, so joining one never
changes what a member says; every error pickles through ``_rebuild``, which bypasses
``__init__`` (and so the refusing metaclass of the control-flow errors).
"""

from __future__ import annotations

from typing import Any, NoReturn


def _format(message: str, code: int | None) -> str:
    return f"DBOS Error {code}: {message}" if code is not None else f"DBOS Error: {message}"


class DBOSException(Exception):
    """Base class of dbos_trio errors; ``dbos_error_code`` is the cross-SDK code."""

    def __init__(self, message: str, dbos_error_code: int | None = None) -> None:
        self.message = message
        self.dbos_error_code = dbos_error_code
        super().__init__(message)

    def __str__(self) -> str:
        return _format(self.message, self.dbos_error_code)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rebuild(cls: type[BaseException], state: dict[str, Any]) -> BaseException:
    error = cls.__new__(cls)
    error.__dict__.update(state)
    error.args = (state.get("message", ""),)
    return error


class DBOSBaseException(BaseException):
    """Control flow that must propagate through user code, like ``trio.Cancelled``."""

    def __init__(self, message: str, dbos_error_code: int | None = None) -> None:
        self.message = message
        self.dbos_error_code = dbos_error_code
        super().__init__(message)

    def __str__(self) -> str:
        return _format(self.message, self.dbos_error_code)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__.copy()))


class _NoPublicConstructor(type):
    """Calling the class raises ``TypeError``: only the engine makes instances (``_create``).

    As trio's ``NoPublicConstructor``. Unpickling still works: ``_rebuild`` calls
    ``__new__`` and never the class."""

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__} has no public constructor: dbos_trio "
            "raises it, user code only catches it (and should re-raise it)"
        )


def _construct(cls: type[Any], *args: Any) -> Any:
    """An instance of ``cls`` made past its metaclass's refusing ``__call__``."""
    return type.__call__(cls, *args)


class DBOSInvalidArgumentError(DBOSException, ValueError):
    """A value passed to a dbos_trio call breaks a rule (the message names the argument
    and the rule). Raised before anything is written.

    The family of refused arguments: :class:`DBOSArgumentTypeError` (the wrong type) and
    :class:`InvalidValueError` (a value the database refused) are ones too."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class DBOSTimeoutError(DBOSException):
    """Family: something took longer than the time it was given and was given up on
    (:class:`DBOSStepTimeoutError`, :class:`DBOSStreamTimeoutError`,
    :class:`DBOSQueryTimeoutError`). Not a builtin ``TimeoutError``, which is an
    ``OSError`` and would read as a network failure."""


class DBOSDuplicateIDError(DBOSException):
    """Family: an id is already held, so nothing new was started or enqueued
    (:class:`DBOSConflictingWorkflowError`, :class:`DBOSWorkflowIDInUseError`,
    :class:`DBOSQueueDeduplicatedError`). Use a fresh id, or treat the holder as yours."""


class DBOSNondeterminismError(DBOSException):
    """Family: a workflow's durable calls did not replay as they were recorded, or were
    made where their order depends on scheduling (:class:`DBOSUnexpectedStepError`,
    :class:`DBOSStepNondeterminismError`, :class:`DBOSUnorderedTaskError`). Make the
    order of durable calls depend only on the inputs and on step results."""


class DBOSStoredDataError(DBOSException):
    """Family: what the system database holds cannot be read back
    (:class:`DBOSPayloadError`, a payload; :class:`DBOSCorruptRowError`, a row)."""


class DBOSAwaitedWorkflowError(DBOSException):
    """Family: an awaited workflow ended without an outcome of its own to return or raise
    (:class:`DBOSAwaitedWorkflowCancelledError`,
    :class:`DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded`)."""


class DBOSInitializationError(DBOSException):
    """Launch (or opening a :class:`~dbos_trio.Client` or datasource) failed: the database
    could not be reached or opened, or its schema is not migrated and this process may
    not migrate it. Nothing was started; fix what ``detail`` names and launch again.

    Code 3, as in the official SDK. ``detail`` is the message without the prefix, so a
    caller that wraps it never repeats "DBOS Error 3"."""

    def __init__(self, message: str) -> None:
        self.detail = message
        super().__init__(f"Error initializing dbos_trio: {message}", 3)


class SystemDatabaseError(DBOSException):
    """The system database failed (connection lost, server error). Never a workflow outcome
    by itself: a transient failure is retried until the database is back (or
    ``database_retry_limit`` runs out, and then it is raised), the row stays PENDING."""


# Pickles name the function by this attribute: keep it the public module's, which
# re-exports it (rows written before this module existed name it there too).
_rebuild.__module__ = "dbos_trio.errors"
