from __future__ import annotations

from collections.abc import Iterator

import pytest
from pg_support import fresh_database


@pytest.fixture
def empty_database_url() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped when the test ends."""
    with fresh_database("empty") as url:
        yield url
