"""The error taxonomy of the system database: every driver error, named once, by kind.

Invariant: a driver error (psycopg's, sqlite3's) never travels above the backends. Each
backend maps it, at the one place it runs statements, into exactly one of the kinds
below, and everything above — the shared statement code, the retry policy, the engine —
decides by kind, never by SQLSTATE, message text or ``__cause__``. The kinds are split by
what the caller should do, which is also who is to blame:

* :class:`TransientDatabaseError` — nobody's fault, try again after a pause: the
  connection was lost or could not be made (:class:`ConnectionLost`), or the transaction
  lost a race with another one (:class:`Contention`: serialization failure, deadlock,
  lock timeout, SQLite busy). Every operation of the protocol is idempotent by
  construction, so retrying after a reply that never came lands on the same state.
* :class:`InvalidValueError` — the caller's fault: a value the database cannot store
  (too long for an index, a NUL byte, out of range). Retrying cannot help; it is raised
  into whoever passed the value (a ``ValueError`` too), and it is *not* a
  :class:`SystemDatabaseError`, so inside a workflow it is that workflow's outcome, never
  control that leaves the row hanging.
* Conflicts the protocol expects and turns into its own answers:
  :class:`UniqueViolation` (a deduplication id held, a stream offset taken) and
  :class:`ForeignKeyViolation` (a message to a workflow that does not exist).
* :class:`StatementTimeout` — the server cancelled a statement that ran too long.
* :class:`DatabaseClosed` — this process closed its connection (shutdown, a simulated
  crash): never retried.
* :class:`UnexpectedDatabaseError` — anything else (a missing table, a bug in a
  statement): permanent, reported as it is.

Opening a backend that cannot connect at all raises :class:`SystemDatabaseUnreachable`, a
:class:`~dbos_trio.DBOSInitializationError` (launch fails; it is not retried).

Where they live: every kind a user can meet (all but the two conflicts, which never leave
the protocol's code) is public, in :mod:`dbos_trio.errors` and ``dbos_trio`` (defined in
``dbos_trio._core.database_errors``), so what reaches a caller has a public name; this
module re-exports them for the backends, and so that rows pickled naming
``dbos_trio._sysdb.errors`` (or the older ``dbos_trio.sysdb.errors``) still decode. The
database's refusal of a value, :class:`InvalidValueError`, is a
:class:`~dbos_trio.DBOSInvalidArgumentError`.

Two of the kinds are *control* for the engine (:func:`is_control`): a transient error
the retry policy gave up on (only under a configured bound), and a connection this
process closed. Those never become a workflow's outcome: the row stays PENDING, and a
live executor runs it again. Every other kind raised inside a workflow body is an
exception like any other: uncaught, it is that workflow's ERROR, never a row that hangs
and re-runs at every launch.
"""

from __future__ import annotations

from dbos_trio.errors import (
    ConnectionLost,
    Contention,
    DatabaseClosed,
    DBOSQueryTimeoutError,
    InvalidValueError,
    SystemDatabaseError,
    SystemDatabaseUnreachable,
    TransientDatabaseError,
    UnexpectedDatabaseError,
)

__all__ = [
    "ConnectionLost",
    "Contention",
    "DatabaseClosed",
    "ForeignKeyViolation",
    "InvalidValueError",
    "MappedError",
    "StatementTimeout",
    "SystemDatabaseError",
    "SystemDatabaseUnreachable",
    "TransientDatabaseError",
    "UnexpectedDatabaseError",
    "UniqueViolation",
]


class UniqueViolation(SystemDatabaseError):
    """A unique key already holds this value (an expected conflict, turned into an answer)."""


class ForeignKeyViolation(SystemDatabaseError):
    """A referenced row does not exist (an expected conflict, turned into an answer)."""


StatementTimeout = DBOSQueryTimeoutError
"""The server cancelled a statement after its ``statement_timeout``: the public
:class:`~dbos_trio.DBOSQueryTimeoutError` itself (once a subclass of it, which users met
under this private name). Rows pickled naming ``StatementTimeout`` decode to it."""


MappedError = SystemDatabaseError | InvalidValueError
"""What a backend raises for a driver error: one of the kinds above."""


def is_control(error: BaseException) -> bool:
    """Whether ``error`` is control for the engine: a transient failure that outlasted the
    retry bound, or a connection this process closed (see the module docs)."""
    return isinstance(error, TransientDatabaseError | DatabaseClosed)
