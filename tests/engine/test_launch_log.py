"""An INFO line says where and as what an executor launched, and one says it shut down:
the database (its password hidden), the executor id, the application version and the
queues, so "my workflows are not picked up" starts with a look at the log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dbos_trio import DBOS, Config

from support.pg_support import fresh_database


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.INFO and r.getMessage().startswith(("launched ", "shut down "))
    ]


async def test_launch_and_shutdown_are_logged_on_sqlite(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="dbos_trio")
    url = f"sqlite:///{tmp_path / 'app.sqlite'}"
    dbos = DBOS(Config(app_name="logged", database_url=url, app_version="v7"))
    dbos.register_queue("orders")
    dbos.register_queue("emails")
    async with dbos.launched():
        (launched,) = _lines(caplog)
    assert launched.startswith("launched logged version v7 as executor local on ")
    assert url in launched and "queues: emails, orders" in launched
    assert _lines(caplog)[1] == f"shut down logged version v7 executor local on {url}"


async def test_the_password_in_the_url_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="dbos_trio")
    with fresh_database("launchlog") as plain:
        # The test server trusts local connections: the password is carried, not checked.
        url = plain.replace("postgresql://postgres@", "postgresql://postgres:s3cr3t-pw@")
        assert "s3cr3t-pw" in url
        dbos = DBOS(Config(app_name="logged", database_url=url, executor_id="worker-2"))
        async with dbos.launched():
            pass
    launched, shut_down = _lines(caplog)
    assert "as executor worker-2 on postgresql://postgres:***@" in launched
    assert "queues: none" in launched and "worker-2" in shut_down
    assert not [r for r in caplog.records if "s3cr3t-pw" in r.getMessage()]
