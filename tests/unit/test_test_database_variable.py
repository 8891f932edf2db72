"""One documented variable names the tests' PostgreSQL server, for the project's tests and
for the ``dbos_trio.testing`` pytest plugin alike; the older name still works."""

from __future__ import annotations

import pytest

from dbos_trio.testing.pytest_plugin import (
    LEGACY_POSTGRES_URL_ENV,
    POSTGRES_URL_ENV,
    configured_postgres_url,
)

NEW = "postgresql://new@127.0.0.1:5432/postgres"
OLD = "postgresql://old@127.0.0.1:5432/postgres"


def test_the_documented_variable_wins_over_the_old_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POSTGRES_URL_ENV, NEW)
    monkeypatch.setenv(LEGACY_POSTGRES_URL_ENV, OLD)
    assert configured_postgres_url() == NEW


def test_the_old_variable_is_read_when_the_new_one_is_unset_or_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(POSTGRES_URL_ENV, "")
    monkeypatch.setenv(LEGACY_POSTGRES_URL_ENV, OLD)
    assert configured_postgres_url() == OLD
    monkeypatch.delenv(POSTGRES_URL_ENV)
    assert configured_postgres_url() == OLD


def test_nothing_configured_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POSTGRES_URL_ENV, raising=False)
    monkeypatch.delenv(LEGACY_POSTGRES_URL_ENV, raising=False)
    assert configured_postgres_url() is None


def test_the_project_tests_resolve_their_server_through_the_same_function() -> None:
    from support import pg_support

    assert pg_support.configured_postgres_url is configured_postgres_url
