"""Datasource checkpoints shared with the official ``dbos`` 3.4 package, both ways.

Each side crashes two workflows right after their transactions committed and before their
step rows were written (a success and a recorded error), and the other side recovers them:
it must replay the ``datasource_outputs`` rows the first one wrote — the value, and the
error raised again — without running the transactions (ours recovers them at launch; the
official resumes them, as they belong to other executors). The datasource lives in the system
database's own schema (``dbos``), as an official app would have it by default.
"""

from __future__ import annotations

import base64
import pickle
from pathlib import Path
from typing import Any

import pytest
from interop_support import rows, run_official

from dbos_trio import DBOS, Config, SetWorkflowID, TransactionConnection
from dbos_trio.testing import CrashPoint, run_until_crash

from support.app_databases import datasource_for

pytestmark = pytest.mark.interop

DRIVER = Path(__file__).resolve().parent / "official" / "datasource_driver.py"
APP_NAME, APP_VERSION = "ds-interop", "ds-v1"  # as in the official driver


class Recording:
    """Our side of the application, mirroring the official driver's."""

    def __init__(self, url: str, executor_id: str | None = None, **datasource: Any) -> None:
        self.runs: list[str] = []
        self.dbos = DBOS(
            Config(
                app_name=APP_NAME,
                database_url=url,
                app_version=APP_VERSION,
                executor_id=executor_id,
            )
        )
        ds = datasource_for(self.dbos, url, **datasource)

        @ds.transaction(name="ds_increment")
        async def ds_increment(conn: TransactionConnection, tag: str) -> int:
            self.runs.append("ds_increment")
            return int(
                await conn.fetch_value("UPDATE ds_counters SET n = n + 1 WHERE id = 1 RETURNING n")
            )

        @ds.transaction(name="ds_refuse")
        async def ds_refuse(conn: TransactionConnection, tag: str) -> None:
            self.runs.append("ds_refuse")
            await conn.execute("INSERT INTO ds_counters (id, n) VALUES (2, 1)")
            raise ValueError(f"refused {tag}")

        @self.dbos.workflow(name="ds_interop_ok")
        async def ds_interop_ok(tag: str) -> int:
            return await ds_increment(tag)

        @self.dbos.workflow(name="ds_interop_err")
        async def ds_interop_err(tag: str) -> str:
            try:
                await ds_refuse(tag)
            except ValueError as error:
                return f"caught {error}"
            return "not refused"

        self.ok, self.err = ds_interop_ok, ds_interop_err


async def counters(url: str) -> list[tuple[Any, ...]]:
    return await rows(url, "SELECT id, n FROM ds_counters ORDER BY id")


async def checkpoints(url: str, *workflow_ids: str) -> dict[str, tuple[Any, ...]]:
    found = await rows(
        url,
        "SELECT workflow_id, step_id, output, error, serialization FROM dbos.datasource_outputs "
        "WHERE workflow_id = ANY(%s)",
        list(workflow_ids),
    )
    return {row[0]: row[1:] for row in found}


async def steps(url: str, workflow_id: str) -> list[tuple[Any, ...]]:
    return await rows(
        url,
        "SELECT function_id, function_name, output, error FROM dbos.operation_outputs "
        "WHERE workflow_uuid = %s ORDER BY function_id",
        workflow_id,
    )


def assert_crashed_checkpoints(found: dict[str, tuple[Any, ...]], ok: str, err: str) -> None:
    """The two rows a crash leaves, as both SDKs write them: a pickled 1, a pickled error."""
    step_id, output, error, serialization = found[ok]
    assert (step_id, error, serialization) == (1, None, "py_pickle")
    assert pickle.loads(base64.b64decode(output)) == 1
    step_id, output, error, serialization = found[err]
    assert (step_id, output, serialization) == (1, None, "py_pickle")
    raised = pickle.loads(base64.b64decode(error))
    assert isinstance(raised, ValueError)


async def test_dbos_trio_replays_the_datasource_rows_official_committed(
    url: str, official_python: Path
) -> None:
    await rows(url, "CREATE TABLE ds_counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    await rows(url, "INSERT INTO ds_counters VALUES (1, 0)")
    crashed = await run_official(official_python, "crash", url, "off-ok", "off-err", driver=DRIVER)
    assert crashed["runs"] == {"ds_increment": 1, "ds_refuse": 1}
    assert_crashed_checkpoints(await checkpoints(url, "off-ok", "off-err"), "off-ok", "off-err")
    assert await steps(url, "off-ok") == [] and await steps(url, "off-err") == []
    # Ours only verifies the official's migration: its version table is the shared one.
    app = Recording(url, run_migrations=False)
    async with app.dbos.launched():  # recovery re-runs both PENDING workflows
        ok = await (await app.dbos.retrieve_workflow("off-ok")).get_result()
        err = await (await app.dbos.retrieve_workflow("off-err")).get_result()
    assert (ok, err) == (1, "caught refused official")
    assert app.runs == []  # replayed, not run
    assert await counters(url) == [(1, 1)]
    # The step rows, as the official SDK writes a transaction's: named as it, pickled.
    ((_, name, output, error),) = await steps(url, "off-ok")
    assert (name, pickle.loads(base64.b64decode(output)), error) == ("ds_increment", 1, None)
    ((_, name, output, error),) = await steps(url, "off-err")
    assert (name, output) == ("ds_refuse", None)
    assert str(pickle.loads(base64.b64decode(error))) == "refused official"
    assert await checkpoints(url, "off-ok", "off-err") == {}  # dropped at completion


async def test_official_replays_the_datasource_rows_dbos_trio_committed(
    url: str, official_python: Path
) -> None:
    await rows(url, "CREATE TABLE ds_counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    await rows(url, "INSERT INTO ds_counters VALUES (1, 0)")
    runs: list[str] = []
    for workflow_id in ("trio-ok", "trio-err"):
        # An executor of its own per crash, so the next launch does not recover the last.
        app = Recording(url, executor_id=f"crashed-{workflow_id}")
        workflow = app.ok if workflow_id == "trio-ok" else app.err
        async with run_until_crash(app.dbos, CrashPoint.before_step(workflow_id, 1)) as run:
            with SetWorkflowID(workflow_id):
                await app.dbos.start_workflow(workflow, "trio")
            await run.wait()
        assert run.crashed_before
        runs += app.runs
    assert runs == ["ds_increment", "ds_refuse"]
    assert_crashed_checkpoints(await checkpoints(url, "trio-ok", "trio-err"), "trio-ok", "trio-err")
    recovered = await run_official(
        official_python, "recover", url, "trio-ok", "trio-err", driver=DRIVER
    )
    assert recovered == {
        "results": {"ok": 1, "err": "caught refused trio"},
        "runs": {"ds_increment": 0, "ds_refuse": 0},  # replayed, not run
    }
    assert await counters(url) == [(1, 1)]
    assert [s[1] for s in await steps(url, "trio-ok")] == ["ds_increment"]
    assert await checkpoints(url, "trio-ok", "trio-err") == {}  # dropped at completion
