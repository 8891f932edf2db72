"""Where driver errors become ours: scrubbed of the URL's secrets, chained to nothing.

Pure: the psycopg errors are made by hand, nothing connects.
"""

from __future__ import annotations

import logging
import traceback

import psycopg
import pytest
import trio

from dbos_trio._pg.scrubbing import scrubbed
from dbos_trio._redact import NO_SECRETS, Scrubber
from dbos_trio._sysdb.errors import ConnectionLost, UnexpectedDatabaseError
from dbos_trio._sysdb.postgres.errors import map_error
from dbos_trio._sysdb.retry import EXECUTOR_POLICY, Retrier

SECRET = "S3cret-PW"


def assert_hidden(text: str) -> None:
    assert SECRET not in text, text


def _chain(error: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def test_a_scrubbed_driver_error_keeps_its_class_and_drops_its_chain() -> None:
    scrub = Scrubber.for_urls(f"postgresql://alice:{SECRET}@h/app")
    try:
        try:
            raise OSError(f"refused {SECRET}")
        except OSError as inner:
            raise psycopg.OperationalError(f"connection failed: {SECRET}") from inner
    except psycopg.OperationalError as raw:
        copy = scrubbed(raw, scrub)

    assert type(copy) is psycopg.OperationalError
    assert str(copy) == "connection failed: ***"
    assert _chain(copy) == [copy]
    assert_hidden("".join(traceback.format_exception(copy)))


def test_map_error_scrubs_the_text_and_chains_only_a_scrubbed_copy() -> None:
    scrub = Scrubber.for_urls(f"postgresql://alice:{SECRET}@h/app")
    mapped = None
    try:
        raise psycopg.errors.AdminShutdown(f"terminating connection of {SECRET}")
    except psycopg.Error as raw:
        mapped = map_error(raw, scrub)

    assert isinstance(mapped, ConnectionLost)  # kind decided by the original's SQLSTATE
    assert SECRET not in str(mapped) and "***" in str(mapped)
    assert isinstance(mapped.__cause__, psycopg.errors.AdminShutdown)
    for link in _chain(mapped):
        assert SECRET not in str(link)
    assert_hidden("".join(traceback.format_exception(mapped)))


def test_map_error_by_class_when_there_is_no_sqlstate() -> None:
    mapped = map_error(psycopg.ProgrammingError("odd"), NO_SECRETS)

    assert isinstance(mapped, UnexpectedDatabaseError)


async def test_the_retry_warning_is_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    scrub = Scrubber.for_urls(f"postgresql://alice:{SECRET}@h/app")
    retrier = Retrier(EXECUTOR_POLICY, scrub=scrub)

    with caplog.at_level(logging.DEBUG, logger="dbos_trio"):
        retrier.lost(ConnectionLost(f"system database error: {SECRET} refused"))
        await trio.lowlevel.checkpoint()

    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert_hidden(caplog.text)
    assert "***" in caplog.text
