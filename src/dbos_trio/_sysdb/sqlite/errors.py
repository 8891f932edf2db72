"""sqlite3's errors, mapped once into the kinds of :mod:`dbos_trio._sysdb.errors`.

By SQLite's extended result code where it has one. This is the only module that looks at
them.
"""

from __future__ import annotations

import sqlite3

from dbos_trio._sysdb.errors import (
    Contention,
    DatabaseClosed,
    ForeignKeyViolation,
    InvalidValueError,
    MappedError,
    SystemDatabaseError,
    UnexpectedDatabaseError,
    UniqueViolation,
)

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_UNIQUE = frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})
_FOREIGN_KEY = "SQLITE_CONSTRAINT_FOREIGNKEY"

DriverError = sqlite3.Error | OverflowError | UnicodeError
DRIVER_ERRORS = (sqlite3.Error, OverflowError, UnicodeError)


def is_busy(error: BaseException) -> bool:
    """Another connection holds the lock this statement needs (SQLITE_BUSY/LOCKED)."""
    return isinstance(error, sqlite3.OperationalError) and (
        getattr(error, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    )


def map_error(error: DriverError) -> MappedError:
    """The kind of ``error``, with the driver's message, caused by ``error``."""
    mapped = _kind_of(error)(f"system database error: {error}")
    mapped.__cause__ = error
    return mapped


def _kind_of(error: DriverError) -> type[SystemDatabaseError] | type[InvalidValueError]:
    if isinstance(error, OverflowError | UnicodeError | sqlite3.DataError):
        return InvalidValueError  # an integer beyond 64 bits, a lone surrogate
    if is_busy(error):
        return Contention
    if isinstance(error, sqlite3.IntegrityError):
        name = getattr(error, "sqlite_errorname", "")
        if name in _UNIQUE:
            return UniqueViolation
        if name == _FOREIGN_KEY:
            return ForeignKeyViolation
        return UnexpectedDatabaseError
    if isinstance(error, sqlite3.ProgrammingError) and "closed" in str(error):
        return DatabaseClosed
    return UnexpectedDatabaseError
