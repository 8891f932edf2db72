"""A live executor runs again any workflow it owns that nothing runs (the orphan sweep).

A workflow whose task ended without an outcome — here, a control failure escaping its
body, as when a call gives up under a configured retry bound — stays PENDING under its
executor. Within one sweep interval the executor hands it back to its queue (fenced on
its owner token), and it runs again from its last checkpoint. Under virtual time
(SQLite, ``autojump_clock``): the mechanism is what is observed, not real time.
"""

from __future__ import annotations

from pathlib import Path

import trio

from dbos_trio import DBOS, Config, SetWorkflowID
from dbos_trio._engine.runtime.orphans import rerun_orphans
from dbos_trio._sysdb.errors import ConnectionLost
from dbos_trio.testing import launched, sqlite_url


async def test_a_workflow_whose_task_ended_without_an_outcome_runs_again_from_its_checkpoint(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    dbos = DBOS(Config(app_name="orphans", database_url=sqlite_url(tmp_path / "db.sqlite")))
    runs: list[str] = []
    failures = ["once"]

    @dbos.step()
    async def first() -> str:
        runs.append("first")
        return "a"

    @dbos.step()
    async def second() -> str:
        runs.append("second")
        if failures:
            failures.pop()
            raise ConnectionLost("the database stayed away longer than the retry bound")
        return "b"

    @dbos.workflow()
    async def flow() -> str:
        return await first() + await second()

    async with launched(dbos):
        with SetWorkflowID("orphan-1"):
            handle = await dbos.start_workflow(flow)
        with trio.fail_after(3600):  # virtual seconds: a few sweep intervals
            assert await handle.get_result() == "ab"
    # The first step's checkpoint held: only the interrupted step ran again.
    assert runs == ["first", "second", "second"]


async def test_the_sweep_leaves_alone_what_runs_here_and_what_was_just_touched(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    dbos = DBOS(Config(app_name="orphans", database_url=sqlite_url(tmp_path / "db.sqlite")))
    release = trio.Event()

    @dbos.workflow()
    async def waiting() -> str:
        await release.wait()
        return "done"

    async with launched(dbos):
        with SetWorkflowID("alive-1"):
            handle = await dbos.start_workflow(waiting)
        executor = dbos._require_executor("test")
        # Running here: never handed back, however old.
        assert await rerun_orphans(executor, settle_ms=0) == []
        # Not running here, but touched just now: left for a later sweep.
        del executor.local["alive-1"]
        assert await rerun_orphans(executor, settle_ms=60_000) == []
        # Not running here and settled: handed back, once.
        assert await rerun_orphans(executor, settle_ms=0) == ["alive-1"]
        assert await rerun_orphans(executor, settle_ms=0) == []
        release.set()
        assert await handle.get_result() == "done"
