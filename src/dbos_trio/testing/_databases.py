"""Fresh system databases for tests: a SQLite file in a temporary directory, or a new
PostgreSQL database created on a server you name (and dropped afterwards)."""

from __future__ import annotations

import os
import tempfile
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager


def sqlite_url(path: str | os.PathLike[str]) -> str:
    """The ``sqlite:///`` URL of a database file (made absolute)."""
    return "sqlite:///" + os.path.abspath(os.fspath(path))


@contextmanager
def temporary_sqlite_url(file_name: str = "dbos.sqlite") -> Iterator[str]:
    """Yield the URL of a SQLite file in a new temporary directory, removed afterwards.

    The file does not exist yet: the first launch creates and migrates it.
    """
    with tempfile.TemporaryDirectory(prefix="dbos-trio-") as directory:
        yield sqlite_url(os.path.join(directory, file_name))


def _with_database(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError("a PostgreSQL server URL must start with postgresql:// or postgres://")
    return urllib.parse.urlunsplit(parts._replace(path="/" + urllib.parse.quote(name)))


@contextmanager
def temporary_postgres_url(server_url: str, *, prefix: str = "dbos_trio_test") -> Iterator[str]:
    """Create a new, empty database on the server ``server_url`` points at; yield its URL.

    ``server_url`` is a ``postgresql://`` URL of any database its user may run
    ``CREATE DATABASE`` from (``postgresql://postgres@localhost/postgres``, say). The new
    database is dropped (``WITH (FORCE)``) when the block exits. These calls block: they
    are meant for fixtures and test set-up, not for a running executor.
    """
    import psycopg
    from psycopg import sql

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield _with_database(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
