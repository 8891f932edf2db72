"""The errors of the databases that reach a caller: the system database's kinds and a
datasource's unknown commit outcome.

Defined here, below :mod:`dbos_trio.errors` (which exports them), so that what a caller
meets has a public name; the backends raise them through :mod:`dbos_trio._sysdb.errors`
and :mod:`dbos_trio._datasource.protocol`, which re-export them, as rows pickled under
those paths need. Which kind a driver error maps to, and which kinds are control for the
engine, is decided in :mod:`dbos_trio._sysdb.errors`.
"""

from __future__ import annotations

from dbos_trio._core.error_roots import (
    DBOSException,
    DBOSInitializationError,
    DBOSInvalidArgumentError,
    DBOSTimeoutError,
    SystemDatabaseError,
)


class TransientDatabaseError(SystemDatabaseError):
    """A failure that may pass if tried again after a pause; raised only once the retries
    ran out (``database_retry_limit``). Nothing was half-written: every write is
    idempotent and atomic."""


class ConnectionLost(TransientDatabaseError):
    """The connection broke, the server is shutting down or restarting, or it cannot be
    reached right now."""


class Contention(TransientDatabaseError):
    """The transaction lost a race (serialization failure, deadlock, lock timeout, SQLite
    busy): another transaction touched the same rows."""


class DatabaseClosed(SystemDatabaseError):
    """This process closed the connection the call needed: the executor or client shut
    down (or a test simulated a crash) while the call was in flight. Never retried."""


class UnexpectedDatabaseError(SystemDatabaseError):
    """A database error of no known kind (a missing table, say): permanent, reported with
    the server's (scrubbed) message."""


class DBOSQueryTimeoutError(SystemDatabaseError, DBOSTimeoutError):
    """A listing or introspection query ran longer than the configured
    ``statement_timeout`` and the server cancelled it (nothing was changed). Narrow the
    filters, page with ``limit``/``offset``, or raise the timeout."""


class SystemDatabaseUnreachable(DBOSInitializationError):
    """Opening the system database failed: no connection could be made (a bad or
    unparsable URL, a server that does not answer, refused authentication). Not retried;
    nothing was started."""


class InvalidValueError(DBOSInvalidArgumentError):
    """The database refused a value the caller passed (too long, a NUL byte, out of range).

    Not a :class:`SystemDatabaseError`: retrying cannot help, and inside a workflow body it
    raises at the call like any bad argument, so an uncaught one is the workflow's ERROR."""


class TransactionOutcomeUnknown(DBOSException):
    """The connection failed while a datasource transaction's ``COMMIT`` was in flight: it
    may or may not have committed. Outside a workflow nothing can tell, so this is raised
    to the caller (the cause is the driver's error); inside one the attempt is retried,
    and its checkpoint row tells."""
