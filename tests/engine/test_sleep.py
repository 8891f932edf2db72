"""Durable sleep: the wake time is a checkpoint, so a recovered sleep only sleeps what is left.

The crash test kills a real process (``tests/support/scripts/time_sleeper.py``) with SIGKILL in
the middle of a durable sleep and recovers the workflow in a fresh launch.
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
import uuid
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, DBOSException, SetWorkflowID

from support.backends import query, status_row, steps_of
from support.dbos_fixtures import reexecute
from support.queue_fixtures import SCRIPTS, start_script
from support.time_fixtures import running
from support.waiting import wait_until


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"scripts_{name}", SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def sleep_checkpoint(url: str, workflow_id: str) -> tuple[Any, ...] | None:
    """(function_id, output, serialization, started_at, completed_at) of the DBOS.sleep row."""
    rows = await query(
        url,
        "SELECT function_id, output, serialization, started_at_epoch_ms, completed_at_epoch_ms "
        "FROM {t}operation_outputs WHERE workflow_uuid = %s AND function_name = 'DBOS.sleep'",
        workflow_id,
    )
    return rows[0] if rows else None


async def test_a_durable_sleep_records_its_wake_time_and_a_replay_does_not_sleep_again(
    new_dbos: Callable[..., DBOS], db_url: str, sleep_targets: list[float]
) -> None:
    dbos = new_dbos()
    runs = 0

    @dbos.workflow()
    async def sleeper(seconds: float) -> str:
        nonlocal runs
        runs += 1
        await dbos.sleep(seconds)
        return "woke"

    async with running(dbos):
        workflow_id = str(uuid.uuid4())
        before = time.time()
        with SetWorkflowID(workflow_id):
            assert await sleeper(0.5) == "woke"
        row = await sleep_checkpoint(db_url, workflow_id)
        assert row is not None
        function_id, output, serialization, started_at, completed_at = row
        assert function_id == 1
        assert serialization == "portable_json"
        wake = json.loads(output)
        assert before + 0.5 <= wake + 0.05
        assert completed_at == int(wake * 1000)  # the row states when the sleep ends
        assert completed_at - started_at >= 500
        assert sleep_targets == [wake]  # it slept until the recorded wake time

        # Starting it again returns the stored result; re-running the body skips the sleep.
        with SetWorkflowID(workflow_id):
            assert await sleeper(0.5) == "woke"
        assert runs == 1
        assert await reexecute(dbos, db_url, sleeper, workflow_id) == "woke"
        assert sleep_targets == [wake]  # the replay, past its wake time, waited for nothing
        assert runs == 2


async def test_sleeping_zero_or_less_returns_at_once_and_takes_no_step_id(
    new_dbos: Callable[..., DBOS], db_url: str, sleep_targets: list[float]
) -> None:
    dbos = new_dbos()

    @dbos.step()
    async def a_step() -> str:
        return "step"

    @dbos.workflow()
    async def no_sleep() -> str:
        await dbos.sleep(0)
        await dbos.sleep(-5)
        return await a_step()

    async with running(dbos):
        handle = await dbos.start_workflow(no_sleep)
        assert await handle.get_result() == "step"
        assert sleep_targets == []  # no durable sleep waited for anything
        assert [(s[0], s[1]) for s in await steps_of(db_url, handle.workflow_id)] == [
            (1, a_step.__qualname__)
        ]
        # Outside a workflow only a real sleep is refused.
        await dbos.sleep(0)
        with pytest.raises(DBOSException, match=r"sleep\(\) must be called from within a workflow"):
            await dbos.sleep(0.01)


async def test_a_sleep_interrupted_by_shutdown_sleeps_only_the_remainder_after_recovery(
    new_dbos: Callable[..., DBOS], db_url: str, sleep_targets: list[float]
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def sleeper() -> str:
        await dbos.sleep(1.5)
        return "woke"

    workflow_id = str(uuid.uuid4())
    async with running(dbos):
        with SetWorkflowID(workflow_id):
            await dbos.start_workflow(sleeper)
        await wait_until(lambda: sleep_checkpoint(db_url, workflow_id))
        await trio.sleep(0.5)
    assert (await status_row(db_url, workflow_id))["status"] == "PENDING"
    recorded = await sleep_checkpoint(db_url, workflow_id)
    assert recorded is not None
    wake = json.loads(recorded[1])
    async with running(dbos):
        handle = await dbos.retrieve_workflow(workflow_id)
        assert await handle.get_result() == "woke"
    # Recovery slept until the original wake time (1.5 s after the first start), not 1.5 s
    # from the relaunch; and it did not end before it.
    assert sleep_targets[-1] == wake
    assert set(sleep_targets) == {wake}
    assert (await status_row(db_url, workflow_id))["updated_at"] >= int(wake * 1000)
    assert await sleep_checkpoint(db_url, workflow_id) == recorded


@pytest.mark.slow
async def test_a_sleep_survives_sigkill_and_sleeps_only_the_remainder(
    db_url: str, sleep_targets: list[float]
) -> None:
    app_name = f"t5-sleeper-{uuid.uuid4().hex[:8]}"
    workflow_id = str(uuid.uuid4())
    crashed = start_script("time_sleeper.py", db_url, app_name, workflow_id, "4")
    try:
        await wait_until(lambda: sleep_checkpoint(db_url, workflow_id), timeout=30)
        recorded = await sleep_checkpoint(db_url, workflow_id)
        assert recorded is not None
        wake = json.loads(recorded[1])
        await trio.sleep(1.0)
    finally:
        crashed.kill()
    assert await crashed.wait() == -9, crashed.output()
    assert (await status_row(db_url, workflow_id))["status"] == "PENDING"

    dbos, _ = load_script("time_sleeper").build(db_url, app_name)
    async with dbos.launched():
        handle = await dbos.retrieve_workflow(workflow_id)
        assert await handle.get_result() == "woke"
        finished_at = time.time()
    # Recovery slept until the wake time the killed process recorded (4 s after its
    # start), not 4 s from the recovery; and not less.
    assert sleep_targets == [wake]
    assert finished_at >= wake - 0.05
    assert await sleep_checkpoint(db_url, workflow_id) == recorded
    row = await status_row(db_url, workflow_id)
    assert row["status"] == "SUCCESS"
    assert row["recovery_attempts"] >= 2


async def test_sleeps_started_concurrently_are_numbered_in_call_order(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def sleepers() -> None:
        async with trio.open_nursery() as nursery:
            for seconds in (0.3, 0.2, 0.1):
                nursery.start_soon(dbos.sleep, seconds)

    async with running(dbos):
        for _ in range(3):
            handle = await dbos.start_workflow(sleepers)
            await handle.get_result()
            rows = await query(
                db_url,
                "SELECT function_id, output FROM {t}operation_outputs "
                "WHERE workflow_uuid = %s ORDER BY function_id",
                handle.workflow_id,
            )
            wakes = [json.loads(output) for _, output in rows]
            assert [r[0] for r in rows] == [1, 2, 3]
            # Id 1 is the 0.3 s sleep, id 3 the 0.1 s one, whatever order they ran in.
            assert wakes[0] > wakes[1] > wakes[2]


async def test_sleep_refuses_what_is_not_a_duration_and_caps_infinity(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def forever() -> None:
        await dbos.sleep(math.inf)

    @dbos.workflow()
    async def recv_forever() -> object:
        return await dbos.recv("t", timeout_seconds=math.inf)

    async with running(dbos):
        for bad in (math.nan, "1"):
            with pytest.raises(DBOSException, match="needs a number of seconds"):
                await dbos.sleep(bad)  # type: ignore[arg-type]
        handle = await dbos.start_workflow(forever)
        await wait_until(lambda: sleep_checkpoint(db_url, handle.workflow_id))
        recorded = await sleep_checkpoint(db_url, handle.workflow_id)
        assert recorded is not None
        assert json.loads(recorded[1]) == 253402300799.0  # 9999-12-31T23:59:59Z
        await dbos.cancel_workflow(handle.workflow_id)

        receiver = await dbos.start_workflow(recv_forever)
        await wait_until(lambda: sleep_checkpoint(db_url, receiver.workflow_id))
        await dbos.send(receiver.workflow_id, "at last", "t")
        assert await receiver.get_result() == "at last"
