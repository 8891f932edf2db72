"""Fixtures of the conformance suite: the official SDK's tests, ported (issue 32).

Every test here runs on SQLite, and every test that waits
takes pytest-trio's ``autojump_clock`` (Trio's autojumping ``MockClock``): the scenarios are
about what a user's code observes, not about a backend, and virtual time lets their
sleeps, timeouts and retry intervals pass at once without bounding real time. A module
that must see PostgreSQL too overrides ``backend`` with ``params=BACKENDS``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbos_trio import DBOS


@pytest.fixture(scope="module")
def backend() -> str:
    """SQLite only: the only backend virtual time runs on (dbos_trio.testing)."""
    return "sqlite"


@pytest.fixture
def dbos(make_dbos: Callable[..., DBOS]) -> DBOS:
    """A DBOS on this test's fresh database (app ``wf-tests``, version ``v1``)."""
    return make_dbos()
