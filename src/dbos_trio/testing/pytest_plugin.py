"""pytest fixtures for testing dbos_trio applications (needs pytest-trio).

Enable it in your top-level ``conftest.py``::

    pytest_plugins = ["dbos_trio.testing.pytest_plugin"]

Fixtures (override any of them in your own conftest):

* ``dbos_sqlite_url`` — a fresh SQLite file in the test's ``tmp_path`` (not yet created).
* ``dbos_postgres_url`` — a fresh PostgreSQL database, created on the server named by
  ``--dbos-postgres-url`` or ``$DBOS_TRIO_TEST_POSTGRES_URL`` (the one variable this
  plugin and dbos_trio's own tests read; ``$DBOS_TEST_DATABASE_URL``, its former name in
  the project's tests, is still read when it is unset) and dropped after the test.
  With none set, a throwaway PostgreSQL container is started for the session
  (testcontainers, the ``dbos-trio[containers]`` extra) where a Docker daemon answers;
  otherwise the test is skipped, the reason saying which of these is missing.
* ``dbos_database_url`` — the URL the other fixtures use: ``dbos_sqlite_url`` unless you
  override it (``return dbos_postgres_url`` to run on PostgreSQL).
* ``dbos_config`` — a :class:`~dbos_trio.Config` for app ``dbos-test`` on that database.
* ``dbos_app`` — ``DBOS(dbos_config)`` with nothing registered. Override it to build your
  application (register its workflows, steps and queues) from ``dbos_config``.
* ``launched_dbos`` — ``dbos_app``, launched for the test (through
  :func:`dbos_trio.testing.launched`) and shut down after it.

Virtual time: also request pytest-trio's ``autojump_clock`` fixture; the test then runs on
``trio.testing.MockClock(autojump_threshold=0)`` and the launch is paced for it (see
:func:`dbos_trio.testing.launched`). Virtual time needs the SQLite database.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from dbos_trio._config import Config
from dbos_trio._dbos import DBOS
from dbos_trio.testing._containers import docker_unavailable, postgres_container
from dbos_trio.testing._databases import sqlite_url, temporary_postgres_url
from dbos_trio.testing._launch import VIRTUAL_BACKGROUND_INTERVAL, launched

POSTGRES_URL_ENV = "DBOS_TRIO_TEST_POSTGRES_URL"
LEGACY_POSTGRES_URL_ENV = "DBOS_TEST_DATABASE_URL"  # read when POSTGRES_URL_ENV is unset
APP_NAME = "dbos-test"
_VIRTUAL_CLOCK_FIXTURES = ("autojump_clock",)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--dbos-postgres-url",
        default=None,
        help="a postgresql:// URL of a server on which dbos_postgres_url may create "
        f"databases (default: ${POSTGRES_URL_ENV})",
    )


def configured_postgres_url() -> str | None:
    """The PostgreSQL server URL the environment names for tests, or None:
    ``$DBOS_TRIO_TEST_POSTGRES_URL``, else the older ``$DBOS_TEST_DATABASE_URL``."""
    return os.environ.get(POSTGRES_URL_ENV) or os.environ.get(LEGACY_POSTGRES_URL_ENV) or None


@pytest.fixture
def dbos_sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite system database file for this test (created at first launch)."""
    return sqlite_url(tmp_path / "dbos.sqlite")


@pytest.fixture(scope="session")
def dbos_postgres_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A PostgreSQL server URL on which tests may create databases, for the session: the
    configured one, else a container (see the module docs), else the test is skipped."""
    server = request.config.getoption("--dbos-postgres-url") or configured_postgres_url()
    if server:
        yield server
        return
    unavailable = docker_unavailable()
    if unavailable is not None:
        pytest.skip(
            f"no PostgreSQL server: pass --dbos-postgres-url or set {POSTGRES_URL_ENV}; "
            f"no container either: {unavailable}"
        )
    with postgres_container() as url:
        yield url


@pytest.fixture
def dbos_postgres_url(dbos_postgres_server: str) -> Iterator[str]:
    """A fresh PostgreSQL database for this test, dropped afterwards."""
    with temporary_postgres_url(dbos_postgres_server) as url:
        yield url


@pytest.fixture
def dbos_database_url(dbos_sqlite_url: str) -> str:
    """The system database of this test's application (SQLite unless overridden)."""
    return dbos_sqlite_url


@pytest.fixture
def dbos_config(dbos_database_url: str, request: pytest.FixtureRequest) -> Config:
    """The configuration of this test's application. Under the autojump clock, handles on
    workflows running in another executor are polled every five virtual minutes instead
    of every second (one running in this executor wakes its handles at once)."""
    virtual = any(name in request.fixturenames for name in _VIRTUAL_CLOCK_FIXTURES)
    return Config(
        app_name=APP_NAME,
        database_url=dbos_database_url,
        outcome_poll_interval=VIRTUAL_BACKGROUND_INTERVAL if virtual else 1.0,
    )


@pytest.fixture
def dbos_app(dbos_config: Config) -> DBOS:
    """The application under test, not launched. Override to register your workflows."""
    return DBOS(dbos_config)


@pytest.fixture
async def launched_dbos(dbos_app: DBOS) -> AsyncIterator[DBOS]:
    """``dbos_app``, launched for the duration of the test."""
    async with launched(dbos_app) as dbos:
        yield dbos
