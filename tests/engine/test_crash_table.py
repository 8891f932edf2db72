"""The crash-injection watcher intercepts protocol methods by name (one table, method name ->
checkpoint kind) and passes every other call straight through; these tests pin the table to
the protocol and check that each kind is read from its method's arguments."""

from __future__ import annotations

import inspect
from pathlib import Path

from dbos_trio import DBOS, Config, SetWorkflowID
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio.testing import run_until_crash, sqlite_url
from dbos_trio.testing._crash import _FINISHES, CHECKPOINT_WRITES


def test_every_method_the_crash_tables_name_is_a_coroutine_method_of_the_protocol() -> None:
    # A renamed protocol method would otherwise silently stop being counted.
    for name in [*CHECKPOINT_WRITES, *_FINISHES]:
        assert inspect.iscoroutinefunction(getattr(SystemDatabase, name, None)), name


async def test_a_workflow_using_every_durable_operation_shows_one_checkpoint_of_each_kind(
    tmp_path: Path,
) -> None:
    dbos = DBOS(Config(app_name="crash-table", database_url=sqlite_url(tmp_path / "db.sqlite")))

    @dbos.workflow()
    async def child() -> int:
        return 1

    @dbos.workflow()
    async def mixer() -> str:
        handle = await dbos.start_workflow(child)
        await dbos.send("mixer", "hello")
        got = await dbos.recv(timeout_seconds=10)
        await dbos.set_event("greeting", got)
        await dbos.write_stream("greetings", got)
        return f"{got}-{await handle.get_result()}"

    async with run_until_crash(dbos, None, workflow_id="mixer") as run:
        with SetWorkflowID("mixer"):
            handle = await dbos.start_workflow(mixer)
        await run.wait()
        assert await handle.get_result() == "hello-1"
        # A listing is no checkpoint write: it passes through the watcher untouched.
        listed = {status.workflow_id for status in await dbos.list_workflows()}
        assert "mixer" in listed and len(listed) == 2
    assert not run.crashed and run.finished
    # Waiting on a result or a deadline may record plain steps in between; the rest is fixed.
    durable = [c for c in run.checkpoints if c.kind != "step"]
    assert [c.kind for c in durable] == [
        "start",
        "child",
        "send",
        "recv",
        "event",
        "stream",
        "outcome",
    ]
    assert durable[0].name is not None and durable[0].name.endswith("mixer")
    assert [c.name for c in durable[2:]] == [
        "DBOS.send",
        "DBOS.recv",
        "DBOS.setEvent",
        "DBOS.writeStream",
        "SUCCESS",
    ]
    assert all(c.recorded and c.function_id is not None for c in durable[1:-1])
    assert [c.ordinal for c in run.checkpoints] == list(range(1, len(run.checkpoints) + 1))
