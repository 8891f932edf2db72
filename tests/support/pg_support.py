"""Where the tests' PostgreSQL comes from, and fresh databases on it.

Every database test gets a database of its own, created here with a unique name and
dropped afterwards, so tests never see each other's rows. The server is named by
``DBOS_TRIO_TEST_POSTGRES_URL``, the variable the ``dbos_trio.testing`` pytest plugin
reads too (the older ``DBOS_TEST_DATABASE_URL`` is read when it is unset); by default it
is the local trust-auth cluster. Where neither is set, nothing answers on the default
address and a Docker daemon does, a testcontainers PostgreSQL is started instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote, urlencode

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from dbos_trio.testing.pytest_plugin import configured_postgres_url

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


def _container_url() -> str:
    # Optional path: only reached without a configured URL and without a local server.
    from testcontainers.postgres import PostgresContainer

    container = PostgresContainer("postgres:16", driver=None)
    container.start()
    url: str = container.get_connection_url()
    return url


_resolved_admin_url: str | None = None


def admin_url() -> str:
    """The URL of a database with the right to CREATE DATABASE."""
    global _resolved_admin_url
    if _resolved_admin_url is None:
        configured = configured_postgres_url()
        if configured:
            _resolved_admin_url = configured
        elif _answers(DEFAULT_ADMIN_URL):
            _resolved_admin_url = DEFAULT_ADMIN_URL
        else:
            _resolved_admin_url = _container_url()
    return _resolved_admin_url


def as_url(conninfo: str) -> str:
    """``conninfo`` (a URL or a key=value string) as a ``postgresql://`` URL."""
    params = conninfo_to_dict(conninfo)
    user = quote(str(params.get("user", "")), safe="")
    password = params.get("password")
    credentials = user + (":" + quote(str(password), safe="") if password else "")
    host = params.get("host", "127.0.0.1")
    port = params.get("port", 5432)
    query = {
        k: v for k, v in params.items() if k not in ("user", "password", "host", "port", "dbname")
    }
    url = (
        f"postgresql://{credentials}@{host}:{port}/{quote(str(params.get('dbname', '')), safe='')}"
    )
    return url + ("?" + urlencode(query) if query else "")


def url_for_database(name: str) -> str:
    """A ``postgresql://`` URL for database ``name`` on the test server."""
    params = conninfo_to_dict(admin_url())
    params["dbname"] = name
    return as_url(make_conninfo("", **params))


def create_database(prefix: str = "t", template: str | None = None) -> str:
    """A new database named ``dbos_trio_<prefix>_<random>``, empty or a copy of ``template``.

    A copy uses ``STRATEGY FILE_COPY`` where the server has it (PostgreSQL 15+): for a
    database this small it is several times faster than the default ``WAL_LOG``.
    """
    name = f"dbos_trio_{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            strategy = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
            statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}" + strategy).format(
                sql.Identifier(name), sql.Identifier(template)
            )
        conn.execute(statement)
    return name


def drop_database(name: str) -> None:
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextmanager
def fresh_database(prefix: str = "t", template: str | None = None) -> Iterator[str]:
    """Yield the URL of a new database (a copy of ``template`` if given); drop it after."""
    name = create_database(prefix, template)
    try:
        yield url_for_database(name)
    finally:
        drop_database(name)
