"""The driver's fast path, its statements: each query converted once per process.

:meth:`~.driver.TrioConnection.execute` sends a prepared statement with named parameters
as one Bind/Execute, skipping psycopg's generic query conversion. The conversion
(``%(name)s`` placeholders to ``$n``, psycopg's ``_query2pg``) is done here once per query
text and cached, so a hot statement pays for it once per process. Only ASCII queries with
at least one parameter take the fast path: their bytes are the same in every client
encoding, and a query psycopg cannot convert is left to psycopg to report.
"""

from __future__ import annotations

import psycopg
from psycopg import errors as pg_errors
from psycopg import pq
from psycopg._queries import _query2pg

_FATAL_ERROR = pq.ExecStatus.FATAL_ERROR


class FastStatement:
    """A query with ``%(name)s`` placeholders, converted once to ``$n`` form."""

    __slots__ = ("formats", "order", "query")

    def __init__(self, query: str) -> None:
        # ASCII only (see fast_statement), so the bytes are the same in every encoding.
        self.query, self.formats, order, _parts = _query2pg(query.encode("ascii"), "ascii")
        self.order: list[str] = order or []


_STATEMENTS: dict[str, FastStatement | None] = {}
_STATEMENTS_MAX = 512


def fast_statement(query: str) -> FastStatement | None:
    """The converted form of ``query``, or None if the fast path does not take it."""
    try:
        return _STATEMENTS[query]
    except KeyError:
        pass
    statement: FastStatement | None = None
    if query.isascii():
        try:
            converted = FastStatement(query)
        except psycopg.Error:
            converted = None  # let psycopg report it
        if converted is not None and converted.order:
            statement = converted
    if len(_STATEMENTS) >= _STATEMENTS_MAX:
        _STATEMENTS.clear()
    _STATEMENTS[query] = statement
    return statement


def first_error(results: list[pq.abc.PGresult], pgconn: pq.abc.PGconn) -> psycopg.Error | None:
    """The error of the first failed result, as psycopg would raise it, or None."""
    for result in results:
        if result.status == _FATAL_ERROR:
            return pg_errors.error_from_result(result, encoding=pgconn._encoding)
    return None
