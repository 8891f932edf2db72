"""The cancel watcher leaves alone an execution whose own outcome write has committed but
whose reply is not back yet.

At high throughput the watcher's read can land between the two: the row is already
SUCCESS, written by this very execution. Before, the watcher took that for a takeover,
logged "no longer this executor's (its row is SUCCESS)" at WARNING and cancelled an
execution that was returning its result. The window is opened on purpose here: the
backend's outcome write is wrapped so that the watcher runs right after it commits.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from dbos_trio import DBOS, Config, SetWorkflowID
from dbos_trio._engine.runtime.watch import stop_lost

from support.backends import status_row


async def test_a_finished_row_written_by_the_execution_itself_is_not_lost(
    system_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    dbos = DBOS(Config(app_name="own-outcome", database_url=system_database_url))

    @dbos.workflow()
    async def quick(n: int) -> int:
        return n * 2

    stopped: list[list[str]] = []
    async with dbos.launched():
        executor = dbos._require_executor("test")
        sysdb = executor.sysdb
        record = sysdb.record_outcome

        async def record_then_watch(*args: Any, **kwargs: Any) -> Any:
            won = await record(*args, **kwargs)
            stopped.append(await stop_lost(executor))  # the row is finished; no reply yet
            return won

        sysdb.record_outcome = record_then_watch  # type: ignore[method-assign]
        caplog.set_level(logging.INFO, logger="dbos_trio")
        with SetWorkflowID("own"):
            assert await quick(21) == 42
    assert stopped == [[]]
    assert "no longer this executor's" not in caplog.text
    assert (await status_row(system_database_url, "own"))["status"] == "SUCCESS"
