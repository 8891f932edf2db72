"""Application databases for the datasource tests, one per test, on each backend.

``app_database_url`` follows the module's ``backend`` (see :mod:`support.backends`): a new,
empty PostgreSQL database (dropped afterwards) or a new SQLite file in the test's
``tmp_path``. Tests declare it with ``dbos.postgres_datasource(url)`` or
``dbos.sqlite_datasource(url)`` — :func:`datasource_for` picks by the URL — and look at its
rows with :func:`support.backends.query`, which reads ``{t}datasource_outputs`` as
``dbos.datasource_outputs`` on PostgreSQL and ``datasource_outputs`` on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbos_trio import DBOS, Datasource
from dbos_trio.testing import sqlite_url

from support.backends import Backend, query
from support.pg_support import fresh_database


@pytest.fixture
def app_database_url(backend: Backend, tmp_path: Path) -> Iterator[str]:
    """A new, empty application database for this test, on this module's backend."""
    if backend == "sqlite":
        yield sqlite_url(tmp_path / "app.sqlite")
        return
    with fresh_database("app") as url:
        yield url


def datasource_for(dbos: DBOS, url: str, **options: Any) -> Datasource:
    """The datasource of ``dbos`` on ``url``: PostgreSQL or SQLite, by the URL."""
    if url.startswith("sqlite:"):
        return dbos.sqlite_datasource(url, **options)
    return dbos.postgres_datasource(url, **options)


async def checkpoints_of(url: str, workflow_id: str) -> list[tuple[Any, ...]]:
    """``(step_id, output, error, serialization)`` of the workflow's datasource checkpoints."""
    return await query(
        url,
        "SELECT step_id, output, error, serialization FROM {t}datasource_outputs "
        "WHERE workflow_id = %s ORDER BY step_id",
        workflow_id,
    )
