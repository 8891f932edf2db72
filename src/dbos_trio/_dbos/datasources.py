"""Datasources on a ``DBOS`` instance: the application's own databases, and their
``@ds.transaction()`` functions (see :mod:`dbos_trio._engine.durable.transactions`).

A datasource is declared before launch, like a workflow; it connects and migrates its
checkpoint table at every launch and closes at shutdown. Its arguments are checked when it
is declared, before anything connects.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar, overload

from dbos_trio._config import redact_url
from dbos_trio._core import validate
from dbos_trio._datasource.postgres import PostgresDatasource
from dbos_trio._datasource.protocol import (
    DatasourceBackend,
    IsolationLevel,
    TransactionConnection,
    isolation_level,
)
from dbos_trio._datasource.sqlite import SQLiteDatasource
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.durable.transactions import (
    TransactionOptions,
    TransactionStats,
    run_transaction,
)
from dbos_trio._sysdb.migrations import quote_identifier
from dbos_trio._sysdb.sqlite.connection import URL_PREFIX
from dbos_trio.errors import DBOSException, DBOSInvalidArgumentError

P = ParamSpec("P")
R = TypeVar("R")

TransactionFunction = Callable[Concatenate[TransactionConnection, P], Awaitable[R]]
Transaction = Callable[P, Coroutine[Any, Any, R]]


class Datasource:
    """An application database of one ``DBOS`` instance; made by
    :meth:`DBOS.postgres_datasource` or :meth:`DBOS.sqlite_datasource`."""

    def __init__(
        self, dbos: DBOSBase, backend: DatasourceBackend, isolation: IsolationLevel
    ) -> None:
        self._dbos_ref = weakref.ref(dbos)
        self._backend = backend
        self.isolation_level: IsolationLevel = isolation
        self._stats = TransactionStats()

    def __repr__(self) -> str:
        return f"Datasource({self._backend.description})"

    @property
    def serialization_retries(self) -> int:
        """Transaction attempts re-run after a lost serialization race, since creation."""
        return self._stats.serialization_retries

    @property
    def connection_retries(self) -> int:
        """Transaction attempts re-run after a lost connection, since creation."""
        return self._stats.connection_retries

    @property
    def replayed(self) -> int:
        """Transactions that returned an earlier execution's committed result instead of
        running (their step row was missing), since creation."""
        return self._stats.replayed

    async def open(self) -> None:
        """Connect and migrate (or verify): called by every launch, after the system
        database is open. :class:`~dbos_trio.DBOSInitializationError` if it cannot (the
        launch fails); cancellation closes whatever was opened."""
        await self._backend.open()

    async def close(self) -> None:
        """Release the connections: called by shutdown, once every workflow has stopped.
        Idempotent; a transaction called afterwards raises (the datasource is closed)."""
        await self._backend.close()

    @overload
    def transaction(self, func: TransactionFunction[P, R], /) -> Transaction[P, R]: ...

    @overload
    def transaction(
        self, func: None = None, /, *, name: str | None = None, isolation_level: str | None = None
    ) -> Callable[[TransactionFunction[P, R]], Transaction[P, R]]: ...

    def transaction(
        self,
        func: TransactionFunction[P, R] | None = None,
        /,
        *,
        name: str | None = None,
        isolation_level: str | None = None,
    ) -> Any:
        """Make ``async def f(conn, ...)`` a transaction on this datasource; callers call
        ``f(...)`` without ``conn``.

        From a workflow it runs exactly once: its result commits together with its writes,
        and is replayed ever after. Outside workflows and inside steps it is a plain
        transaction. Lost serialization races are retried (the function runs again, in a
        new transaction); any other exception rolls it back and is raised (and, from a
        workflow, recorded: replays raise it again). Cancellation rolls it back and records
        nothing. ``name`` defaults to the function's qualified name; ``isolation_level``
        to the datasource's. Usable as ``@ds.transaction`` or ``@ds.transaction(...)``.
        """
        validate.optional_text(name, "transaction name")
        level = self.isolation_level
        if isolation_level is not None:
            level = _isolation(isolation_level)

        def decorate(f: TransactionFunction[P, R]) -> Transaction[P, R]:
            if not inspect.iscoroutinefunction(f):
                raise TypeError(
                    f"transaction {getattr(f, '__qualname__', f)!r} must be an async def "
                    "taking the connection first"
                )
            options = TransactionOptions(name=name or f.__qualname__, isolation=level)

            @functools.wraps(f)
            def run(*args: P.args, **kwargs: P.kwargs) -> Coroutine[Any, Any, R]:
                executor = self._executor(f"calling transaction {options.name}")
                result: Coroutine[Any, Any, R] = run_transaction(
                    executor, self._backend, self._stats, options, f, tuple(args), dict(kwargs)
                )
                return result

            return run

        return decorate if func is None else decorate(func)

    def _executor(self, operation: str) -> Any:
        dbos = self._dbos_ref()
        if dbos is None:
            raise DBOSException("the DBOS instance of this datasource no longer exists")
        return dbos._require_executor(operation)


def _isolation(value: object) -> IsolationLevel:
    return isolation_level(value, "isolation_level")


class Datasources(DBOSBase):
    def postgres_datasource(
        self,
        url: str,
        *,
        schema: str = "dbos",
        isolation_level: str = "serializable",
        max_connections: int = 10,
        connect_timeout: float = 10.0,
        run_migrations: bool = True,
        prepared_statements: bool = True,
    ) -> Datasource:
        """Declare a PostgreSQL application database (before launch).

        Its checkpoint table ``<schema>.datasource_outputs`` and version table
        ``<schema>.dbos_datasource_migrations`` are the official SDK's (``schema`` may be
        the system database's own); they are created or migrated at launch, or only
        verified with ``run_migrations=False``. ``max_connections`` bounds its own pool;
        ``prepared_statements=False`` for a transaction-pooling proxy. A bad argument
        raises :class:`~dbos_trio.DBOSInvalidArgumentError` naming it; an unreachable
        database raises :class:`~dbos_trio.DBOSInitializationError` at launch.
        """
        validate.text(url, "url")
        if not url.startswith(("postgresql://", "postgres://")):
            raise DBOSInvalidArgumentError(
                f"url must be a postgresql:// URL, not {redact_url(url)!r}"
            )
        validate.text(schema, "schema")
        try:
            quote_identifier(schema)
        except ValueError as bad:
            raise DBOSInvalidArgumentError(f"schema: {bad}") from None
        backend = PostgresDatasource(
            url,
            schema=schema,
            max_connections=validate.integer(max_connections, "max_connections", low=1),
            connect_timeout=validate.seconds(connect_timeout, "connect_timeout", positive=True),
            run_migrations=validate.boolean(run_migrations, "run_migrations"),
            prepared_statements=validate.boolean(prepared_statements, "prepared_statements"),
        )
        return self._declare(backend, _isolation(isolation_level))

    def sqlite_datasource(
        self, url: str, *, isolation_level: str = "serializable", run_migrations: bool = True
    ) -> Datasource:
        """Declare a SQLite application database (before launch): ``sqlite:///path``.

        Its tables are the official SDK's SQLite datasource's (``datasource_outputs``,
        ``dbos_datasource_migrations``); the file may be the system database's own. Every
        transaction takes SQLite's write lock up front, so it is serializable whatever
        ``isolation_level`` says. Errors as for :meth:`postgres_datasource`.
        """
        validate.text(url, "url")
        if not url.startswith(URL_PREFIX) or len(url) == len(URL_PREFIX) or "?" in url:
            raise DBOSInvalidArgumentError(
                f"url must be sqlite:///relative/path or sqlite:////absolute/path, not {url!r}"
            )
        backend = SQLiteDatasource(
            url, run_migrations=validate.boolean(run_migrations, "run_migrations")
        )
        return self._declare(backend, _isolation(isolation_level))

    def _declare(self, backend: DatasourceBackend, isolation: IsolationLevel) -> Datasource:
        datasource = Datasource(self, backend, isolation)
        self._registry.add_resource(datasource, f"the {backend.description}")
        return datasource
