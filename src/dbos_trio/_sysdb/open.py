"""The one place a system-database URL becomes a backend.

``DBOS``, ``Client`` and the CLI all open their system database here, so a URL means the
same backend, with the same checks, wherever it is given.
"""

from __future__ import annotations

from dbos_trio._redact import redact_url
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.retry import RetryPolicy
from dbos_trio._sysdb.wakeups import WakeupRegistry
from dbos_trio.errors import DBOSInitializationError

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_SCHEME = "sqlite:"


def is_sqlite_url(url: str) -> bool:
    return url.startswith(SQLITE_SCHEME)


async def open_system_database(
    url: str,
    *,
    schema: str = "dbos",
    max_connections: int = 10,
    connect_timeout: float = 10.0,
    run_migrations: bool = True,
    use_listen_notify: bool = True,
    notification_coalesce: float = 0.01,
    recheck_interval: float | None = None,
    wakeups: WakeupRegistry | None = None,
    retry: RetryPolicy | None = None,
    direct_url: str | None = None,
    prepared_statements: bool = True,
    statement_timeout: float | None = None,
    idle_in_transaction_timeout: float | None = None,
    group_commit: bool = False,
) -> SystemDatabase:
    """Connect to the database ``url`` names and migrate it (or, without
    ``run_migrations``, only verify that it is migrated).

    ``postgresql://`` URLs use the PostgreSQL backend; ``sqlite:///path`` the embedded one,
    for which ``schema``, ``max_connections``, ``connect_timeout``, ``use_listen_notify``
    and ``notification_coalesce`` do not apply. ``recheck_interval`` overrides how often
    SQLite waiters look again (tests on virtual time space it out); ``retry`` how transient
    failures are retried (default: a few times, for short-lived users); ``direct_url`` a
    PostgreSQL URL without a transaction-pooling proxy in between, for migrations and
    LISTEN; ``prepared_statements=False`` for such a proxy (PgBouncer before 1.21);
    ``group_commit`` coalesces concurrent step checkpoints into shared commits
    (:mod:`~dbos_trio._sysdb.group_commit`). Raises
    :class:`~dbos_trio.DBOSInitializationError` for a URL of no known scheme, one that
    cannot be reached, or a schema that is not migrated far enough. ``statement_timeout``
    and ``idle_in_transaction_timeout`` (seconds, PostgreSQL only) are as in
    :meth:`~dbos_trio._sysdb.postgres.backend.PostgresSystemDatabase.open`. Cancellation closes
    whatever was opened.
    """
    wakeups = wakeups if wakeups is not None else WakeupRegistry()
    if url.startswith(POSTGRES_SCHEMES):
        from dbos_trio._sysdb.postgres.backend import PostgresSystemDatabase

        postgres = await PostgresSystemDatabase.open(
            url,
            schema=schema,
            max_connections=max_connections,
            connect_timeout=connect_timeout,
            run_migrations=run_migrations,
            use_listen_notify=use_listen_notify,
            wakeups=wakeups,
            notification_coalesce=notification_coalesce,
            retry=retry,
            direct_url=direct_url,
            prepared_statements=prepared_statements,
            statement_timeout=statement_timeout,
            idle_in_transaction_timeout=idle_in_transaction_timeout,
        )
        if group_commit:
            postgres.enable_group_commit()
        return postgres
    if is_sqlite_url(url):
        from dbos_trio._sysdb.sqlite.backend import POLLING_RECHECK_SECONDS, SQLiteSystemDatabase

        sqlite = await SQLiteSystemDatabase.open(
            url,
            run_migrations=run_migrations,
            wakeups=wakeups,
            recheck_interval=POLLING_RECHECK_SECONDS
            if recheck_interval is None
            else recheck_interval,
            retry=retry,
        )
        if group_commit:
            sqlite.enable_group_commit()
        return sqlite
    raise DBOSInitializationError(
        f"unsupported system database URL {redact_url(url)!r}: use a postgresql:// or "
        "sqlite:/// URL"
    )
