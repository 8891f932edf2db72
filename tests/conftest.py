from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.backends import (
    POSTGRES_ONLY,
    backend,
    module_database_url,
    postgres_template,
    skip_postgres_only_on_sqlite,
    sqlite_template,
    system_database_url,
)
from support.pg_support import fresh_database

# The backend-parametrized database fixtures (tests/backends.py), for every test module.
__all__ = [
    "backend",
    "module_database_url",
    "postgres_template",
    "sqlite_template",
    "system_database_url",
]


@pytest.fixture
def empty_database_url() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped when the test ends."""
    with fresh_database("empty") as url:
        yield url


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", POSTGRES_ONLY)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    skip_postgres_only_on_sqlite(items)
