"""The one place a system-database URL becomes a backend.

``DBOS``, ``Client`` and the CLI all open their system database here, so a URL means the
same backend, with the same checks, wherever it is given. How to open it travels as one
value, :class:`BackendOptions`, built once (from a ``Config`` by
:meth:`BackendOptions.from_config`) rather than spelled out option by option at each
caller, so a new option is added in one class and one constructor.
"""

from __future__ import annotations

import attrs

from dbos_trio._config import Config
from dbos_trio._redact import redact_url
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.retry import EXECUTOR_POLICY, RetryPolicy
from dbos_trio._sysdb.wakeups import WakeupRegistry
from dbos_trio.errors import DBOSInitializationError

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_SCHEME = "sqlite:"


def is_sqlite_url(url: str) -> bool:
    return url.startswith(SQLITE_SCHEME)


@attrs.frozen(kw_only=True)
class BackendOptions:
    """How to open a system database: everything but its URL.

    The defaults suit a short-lived user (a test, a script). ``recheck_interval`` overrides
    how often SQLite waiters look again (tests on virtual time space it out); ``retry`` how
    transient failures are retried (None: a few times, for short-lived users);
    ``direct_url`` a PostgreSQL URL without a transaction-pooling proxy in between, for
    migrations and LISTEN; ``prepared_statements=False`` for such a proxy (PgBouncer before
    1.21); ``group_commit`` coalesces concurrent step checkpoints into shared commits
    (:mod:`~dbos_trio._sysdb.group_commit`). ``statement_timeout`` and
    ``idle_in_transaction_timeout`` (seconds, PostgreSQL only) are as in
    :meth:`~dbos_trio._sysdb.postgres.backend.PostgresSystemDatabase.open`. For SQLite,
    ``schema``, ``max_connections``, ``connect_timeout``, ``use_listen_notify``,
    ``notification_coalesce`` and the PostgreSQL-only options do not apply.

    A plain value: building one checks nothing and opens nothing (``Config`` and ``Client``
    validated the options already), so it never raises and cannot be cancelled.
    """

    schema: str = "dbos"
    max_connections: int = 10
    connect_timeout: float = 10.0
    run_migrations: bool = True
    use_listen_notify: bool = True
    notification_coalesce: float = 0.01
    recheck_interval: float | None = None
    retry: RetryPolicy | None = None
    direct_url: str | None = None
    prepared_statements: bool = True
    statement_timeout: float | None = None
    idle_in_transaction_timeout: float | None = None
    synchronous_commit: str | None = None
    group_commit: bool = False

    @classmethod
    def from_config(
        cls, config: Config, *, recheck_interval: float | None = None
    ) -> BackendOptions:
        """An executor's options: ``config``'s, retrying transient errors as an executor
        does (for ``config.database_retry_limit`` seconds, or for ever), with SQLite
        waiters looking again every ``recheck_interval`` seconds (None: the backend's
        default). Never raises."""
        return cls(
            schema=config.schema,
            max_connections=config.max_connections,
            connect_timeout=config.connect_timeout,
            run_migrations=config.run_migrations,
            use_listen_notify=config.use_listen_notify,
            notification_coalesce=config.notification_coalesce,
            recheck_interval=recheck_interval,
            retry=EXECUTOR_POLICY.bounded(config.database_retry_limit),
            direct_url=config.direct_database_url,
            prepared_statements=config.prepared_statements,
            statement_timeout=config.statement_timeout,
            idle_in_transaction_timeout=config.idle_in_transaction_session_timeout,
            synchronous_commit=config.synchronous_commit,
            group_commit=config.group_commit,
        )


async def open_system_database(url: str, options: BackendOptions | None = None) -> SystemDatabase:
    """Connect to the database ``url`` names and migrate it (or, without
    ``options.run_migrations``, only verify that it is migrated).

    ``postgresql://`` URLs use the PostgreSQL backend; ``sqlite:///path`` the embedded one.
    ``options`` (default: :class:`BackendOptions`'s defaults) says how. Each backend gets a
    wakeup registry of its own. Raises :class:`~dbos_trio.DBOSInitializationError` for a
    URL of no known scheme, one that cannot be reached, or a schema that is not migrated
    far enough. Cancellation closes whatever was opened.
    """
    options = options if options is not None else BackendOptions()
    if url.startswith(POSTGRES_SCHEMES):
        from dbos_trio._sysdb.postgres.backend import PostgresSystemDatabase

        postgres = await PostgresSystemDatabase.open(
            url,
            schema=options.schema,
            max_connections=options.max_connections,
            connect_timeout=options.connect_timeout,
            run_migrations=options.run_migrations,
            use_listen_notify=options.use_listen_notify,
            wakeups=WakeupRegistry(),
            notification_coalesce=options.notification_coalesce,
            retry=options.retry,
            direct_url=options.direct_url,
            prepared_statements=options.prepared_statements,
            statement_timeout=options.statement_timeout,
            idle_in_transaction_timeout=options.idle_in_transaction_timeout,
            synchronous_commit=options.synchronous_commit,
        )
        if options.group_commit:
            postgres.enable_group_commit()
        return postgres
    if is_sqlite_url(url):
        from dbos_trio._sysdb.sqlite.backend import POLLING_RECHECK_SECONDS, SQLiteSystemDatabase

        sqlite = await SQLiteSystemDatabase.open(
            url,
            run_migrations=options.run_migrations,
            wakeups=WakeupRegistry(),
            recheck_interval=POLLING_RECHECK_SECONDS
            if options.recheck_interval is None
            else options.recheck_interval,
            retry=options.retry,
        )
        if options.group_commit:
            sqlite.enable_group_commit()
        return sqlite
    raise DBOSInitializationError(
        f"unsupported system database URL {redact_url(url)!r}: use a postgresql:// or "
        "sqlite:/// URL"
    )
