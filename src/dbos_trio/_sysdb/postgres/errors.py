"""psycopg's errors, mapped once into the kinds of :mod:`dbos_trio._sysdb.errors`.

By SQLSTATE where the server sent one, by psycopg class where the error arose in the
client (a lost socket, a value psycopg cannot send). This is the only module that looks
at either.

The mapped error's text is the driver's, scrubbed of the URL's secrets, and what it is
chained to is a scrubbed copy (:mod:`.scrubbing`), never the original: a traceback prints
the whole chain, and libpq's texts may quote a password.
"""

from __future__ import annotations

import re

import psycopg

from dbos_trio._pg.pool import PoolClosed
from dbos_trio._pg.scrubbing import scrubbed
from dbos_trio._redact import Scrubber
from dbos_trio._sysdb.errors import (
    ConnectionLost,
    Contention,
    DatabaseClosed,
    ForeignKeyViolation,
    InvalidValueError,
    MappedError,
    StatementTimeout,
    SystemDatabaseError,
    UnexpectedDatabaseError,
    UniqueViolation,
)

# Serialization failure, deadlock detected, lock not available (NOWAIT, lock_timeout).
_CONTENTION = frozenset({"40001", "40P01", "55P03"})
# Class 08 (connection exception), 53 (insufficient resources: too many connections, out
# of memory or disk), 57P01-57P05 (admin/crash shutdown, cannot connect now, ...), and
# 25P03 (the server ended an idle transaction, closing the connection).
_CONNECTION_CLASSES = ("08", "53", "57P")
_IDLE_IN_TRANSACTION_TIMEOUT = "25P03"
_QUERY_CANCELED = "57014"
# Class 22 (data exception: too long, out of range, invalid text, NUL byte) and 54
# (program limit exceeded: an index row too big).
_INVALID_VALUE_CLASSES = ("22", "54")


# What to do, for errors whose cause is a setting rather than the statement.
_PREPARED_BEHIND_A_POOLER = (
    "a connection pooler in transaction mode (PgBouncer) hands one server connection to "
    "several clients, and prepared statements do not survive that: set "
    "Config(prepared_statements=False), or use PgBouncer 1.21 or later with "
    "max_prepared_statements, or a session-mode pool (docs/concepts/executors.md)"
)
_HINTS = {
    "42P05": _PREPARED_BEHIND_A_POOLER,  # duplicate_prepared_statement
    "26000": _PREPARED_BEHIND_A_POOLER,  # invalid_sql_statement_name: not prepared here
}


def map_error(error: psycopg.Error | UnicodeError, scrub: Scrubber) -> MappedError:
    """The kind of ``error``, with the driver's message scrubbed by ``scrub``, caused by a
    scrubbed copy of ``error`` (a ``UnicodeError``, which holds a value the caller passed
    and no part of the URL, is chained as it is).

    Raise the result outside the ``except`` block that caught ``error``, or the original
    becomes its ``__context__`` (hidden from tracebacks, but still reachable)."""
    kind = _kind_of(error)
    hint = _HINTS.get(getattr(error, "sqlstate", None) or "")
    text = f"system database error: {scrub(error)}"
    mapped = kind(text if hint is None else f"{text} — {hint}")
    mapped.__cause__ = scrubbed(error, scrub) if isinstance(error, psycopg.Error) else error
    return mapped


def _kind_of(
    error: psycopg.Error | UnicodeError,
) -> type[SystemDatabaseError] | type[InvalidValueError]:
    if isinstance(error, UnicodeError):
        return InvalidValueError  # a lone surrogate, which no client encoding can send
    if isinstance(error, PoolClosed):
        return DatabaseClosed
    sqlstate = error.sqlstate
    if sqlstate is None:
        if isinstance(error, psycopg.DataError):
            return InvalidValueError  # refused while dumping, e.g. a NUL in a string
        if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
            return ConnectionLost  # the socket, not the server, failed
        return UnexpectedDatabaseError
    if sqlstate in _CONTENTION:
        return Contention
    if sqlstate == _QUERY_CANCELED:
        return StatementTimeout
    if sqlstate == _IDLE_IN_TRANSACTION_TIMEOUT or sqlstate.startswith(_CONNECTION_CLASSES):
        return ConnectionLost
    if sqlstate == "23505":
        return UniqueViolation
    if sqlstate == "23503":
        return ForeignKeyViolation
    if sqlstate.startswith(_INVALID_VALUE_CLASSES):
        return InvalidValueError
    return UnexpectedDatabaseError


# The server's FATAL for a database that does not exist. A failed connection carries no
# SQLSTATE in psycopg (3D000 is only in the text), so the text is what there is to read.
_MISSING_DATABASE = re.compile(r'database "(?P<name>(?:[^"]|"")+)" does not exist')


def missing_database_hint(error: BaseException) -> str:
    """`` (create it: createdb NAME ...)`` when ``error`` says the database does not exist,
    else "": the server answered, only the database is missing, and launch creates the
    tables but never the database itself."""
    found = _MISSING_DATABASE.search(str(error))
    if found is None:
        return ""
    name = found.group("name").replace('""', '"')
    return (
        f" (the server answered, but has no database {name!r}: create it with "
        f"`createdb {name}` or CREATE DATABASE on that server; the first launch then "
        "creates the tables, or `dbos-trio migrate -s <url>` does)"
    )
