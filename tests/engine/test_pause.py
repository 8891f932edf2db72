"""Pause and unpause, of a workflow and of a queue, durable across a restart, on both
backends.

A paused workflow finishes the step it is in (recorded), stops before its next one, frees
its queue slot, stays PAUSED through a new launch on the same database, and after the
unpause runs on from its checkpoints (the earlier steps do not run again). A paused queue
is claimed from by no executor, even one that registers it again at launch; its running
work goes on. Steps are gated by ``trio.Event``\\ s, never by time.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSException,
    DBOSInvalidArgumentError,
    DBOSNonExistentWorkflowError,
    SetWorkflowID,
)
from dbos_trio.testing import sqlite_url

from support.backends import query
from support.time_fixtures import executor_of
from support.waiting import HANG_GUARD, wait_until

HOUR, DAY = 3600.0, 86400.0


def app(make_dbos: Callable[..., DBOS], ran: list[str], gate: trio.Event) -> tuple[DBOS, Any]:
    """A workflow of three steps whose second waits on ``gate``; the same code at every
    launch (a restart registers it again)."""
    dbos = make_dbos()
    dbos.register_queue("work", worker_concurrency=1)

    @dbos.step()
    async def first() -> str:
        ran.append("first")
        return "a"

    @dbos.step()
    async def second() -> str:
        ran.append("second")
        await gate.wait()
        return "b"

    @dbos.step()
    async def third() -> str:
        ran.append("third")
        return "c"

    @dbos.workflow()
    async def three() -> str:
        return await first() + await second() + await third()

    return dbos, three


async def status_of(dbos: DBOS, workflow_id: str) -> str:
    status = await dbos.get_workflow_status(workflow_id)
    assert status is not None
    return status.status


async def test_a_running_workflow_stops_before_its_next_step_stays_paused_and_resumes(
    make_dbos: Callable[..., DBOS],
) -> None:
    ran: list[str] = []
    gate = trio.Event()
    dbos, three = app(make_dbos, ran, gate)
    async with dbos.launched():
        with SetWorkflowID("wf-1"):
            await dbos.start_workflow(three)
        await wait_until(lambda: ran == ["first", "second"], timeout=HANG_GUARD)
        assert await dbos.pause_workflow("wf-1") is True
        assert await status_of(dbos, "wf-1") == "PAUSED"
        gate.set()  # the step in flight finishes...
        executor = executor_of(dbos)
        await wait_until(lambda: "wf-1" not in executor.local, timeout=HANG_GUARD)
        # ... and is recorded; the next one never started.
        assert ran == ["first", "second"]
        steps = await dbos.list_workflow_steps("wf-1")
        assert [s.function_name.rsplit(".", 1)[-1] for s in steps] == ["first", "second"]
        assert await dbos.pause_workflow("wf-1") is False  # idempotent
        listed = await dbos.list_workflows(status="PAUSED")
        assert [w.workflow_id for w in listed] == ["wf-1"]

    ran.clear()
    again, _ = app(make_dbos, ran, gate)
    async with again.launched():  # a restart: recovery does not touch a PAUSED row
        assert await status_of(again, "wf-1") == "PAUSED"
        assert await again.unpause_workflow("wf-1") is True
        handle = await again.retrieve_workflow("wf-1")
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == "abc"
        assert ran == ["third"]  # the recorded steps were replayed, not run


async def test_pausing_a_queued_workflow_frees_its_slot_and_unpause_puts_it_back_on_its_queue(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    ran: list[str] = []
    gate = trio.Event()
    dbos, three = app(make_dbos, ran, gate)

    @dbos.workflow()
    async def quick() -> str:
        return "quick"

    async with dbos.launched():
        queue = await dbos.retrieve_queue("work")
        assert queue is not None
        with SetWorkflowID("held"):
            held = await queue.enqueue(three)
        await wait_until(lambda: ran == ["first", "second"], timeout=HANG_GUARD)
        with SetWorkflowID("behind"):
            behind = await queue.enqueue(quick)  # worker_concurrency=1: waits for "held"
        async with Client(dbos_url) as client:
            assert await client.pause_workflow("held") is True
        gate.set()
        with trio.fail_after(HANG_GUARD):
            assert await behind.get_result() == "quick"  # the paused one let go of its slot
        [(status, queue_name)] = await query(
            dbos_url,
            "SELECT status, queue_name FROM {t}workflow_status WHERE workflow_uuid = %s",
            "held",
        )
        assert (status, queue_name) == ("PAUSED", "work")
        async with Client(dbos_url) as client:
            assert await client.unpause_workflow("held") is True
        [(status, queue_name)] = await query(
            dbos_url,
            "SELECT status, queue_name FROM {t}workflow_status WHERE workflow_uuid = %s",
            "held",
        )
        assert queue_name == "work" and status in ("ENQUEUED", "PENDING", "SUCCESS")
        with trio.fail_after(HANG_GUARD):
            assert await held.get_result() == "abc"
        assert ran == ["first", "second", "third"]


async def test_a_paused_queue_claims_nothing_across_a_restart_and_its_running_work_goes_on(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    gate = trio.Event()
    started = trio.Event()

    def make(limit: int) -> tuple[DBOS, Any, Any]:
        dbos = make_dbos()
        dbos.register_queue("jobs", global_concurrency=limit)

        @dbos.workflow()
        async def slow() -> str:
            started.set()
            await gate.wait()
            return "slow"

        @dbos.workflow()
        async def job() -> str:
            return "job"

        return dbos, slow, job

    dbos, slow, job = make(5)
    async with dbos.launched():
        queue = await dbos.retrieve_queue("jobs")
        assert queue is not None
        running = await queue.enqueue(slow)
        await started.wait()
        assert await dbos.pause_queue("jobs") is True
        assert await dbos.pause_queue("jobs") is False
        stored = await dbos.retrieve_queue("jobs")
        assert stored is not None and stored.paused and stored.global_concurrency == 5
        changed = await stored.set_worker_concurrency(2)  # a setter keeps it paused
        assert changed.paused and changed.global_concurrency == 5
        executor = executor_of(dbos)
        # Within one sweep the queue is no longer served and its worker has left.
        await wait_until(
            lambda: (
                "jobs" not in executor.queue_set.served and "jobs" not in executor.queue_set.working
            ),
            timeout=HANG_GUARD,
        )
        with SetWorkflowID("waiting-job"):
            await queue.enqueue(job)
        gate.set()
        with trio.fail_after(HANG_GUARD):
            assert await running.get_result() == "slow"  # running work goes on
        assert (await dbos.get_workflow_status("waiting-job")).status == "ENQUEUED"  # type: ignore[union-attr]

    again, _, _ = make(7)  # registered again at launch, with a new limit
    async with again.launched():
        stored = await again.retrieve_queue("jobs")
        assert stored is not None and stored.paused and stored.global_concurrency == 7
        assert "jobs" not in executor_of(again).queue_set.served  # the first sweep ran
        assert (await again.get_workflow_status("waiting-job")).status == "ENQUEUED"  # type: ignore[union-attr]
        [(concurrency,)] = await query(
            dbos_url, "SELECT concurrency FROM {t}queues WHERE name = %s", "jobs"
        )
        assert concurrency == -7  # what every SDK reads: no claims
        async with Client(dbos_url) as client:
            assert await client.unpause_queue("jobs") is True
            assert await client.unpause_queue("jobs") is False
        handle = await again.retrieve_workflow("waiting-job")
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == "job"
        stored = await again.retrieve_queue("jobs")
        assert stored is not None and not stored.paused and stored.global_concurrency == 7


async def test_a_queue_object_pauses_and_unpauses_its_own_queue(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    # Queue.pause()/unpause() (the same on a client's queues): the stored row says paused,
    # what is enqueued meanwhile waits, and unpausing runs it.
    dbos = make_dbos()
    dbos.register_queue("own", worker_concurrency=3)

    @dbos.workflow()
    async def job() -> str:
        return "done"

    async with dbos.launched():
        queue = await dbos.retrieve_queue("own")
        assert queue is not None
        assert await queue.pause() is True
        assert await queue.pause() is False
        stored = await dbos.retrieve_queue("own")
        assert stored is not None and stored.paused
        executor = executor_of(dbos)
        await wait_until(lambda: "own" not in executor.queue_set.working, timeout=HANG_GUARD)
        with SetWorkflowID("held-job"):
            handle = await queue.enqueue(job)
        assert (await dbos.get_workflow_status("held-job")).status == "ENQUEUED"  # type: ignore[union-attr]
        async with Client(dbos_url) as client:
            [client_queue] = [q for q in await client.list_queues() if q.name == "own"]
            assert await client_queue.unpause() is True
        assert await queue.unpause() is False
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == "done"


async def test_a_step_out_of_retries_pauses_its_workflow_and_unpause_runs_it_again(
    make_dbos: Callable[..., DBOS], caplog: pytest.LogCaptureFixture
) -> None:
    dbos = make_dbos()
    fixed = [False]
    attempts: list[int] = []
    workflow_id = f"order-{uuid.uuid4().hex[:8]}"

    @dbos.step()
    async def before() -> str:
        return "before"

    @dbos.step(retries_allowed=True, max_attempts=2, interval_seconds=0, on_exhausted="pause")
    async def charge() -> str:
        attempts.append(1)
        if not fixed[0]:
            raise ValueError("gateway down")
        return "charged"

    @dbos.workflow()
    async def checkout() -> str:
        return await before() + " " + await charge()

    caplog.set_level(logging.WARNING, logger="dbos_trio")
    results: list[str] = []

    def logged(text: str) -> list[logging.LogRecord]:
        return [r for r in caplog.records if text in r.getMessage()]

    async with dbos.launched(), trio.open_nursery() as nursery:
        with SetWorkflowID(workflow_id):
            handle = await dbos.start_workflow(checkout)
        executor = executor_of(dbos)
        await wait_until(lambda: workflow_id not in executor.local, timeout=HANG_GUARD)
        assert (await dbos.get_workflow_status(workflow_id)).status == "PAUSED"  # type: ignore[union-attr]
        assert len(attempts) == 2
        steps = await dbos.list_workflow_steps(workflow_id)
        assert len(steps) == 1 and steps[0].error is None  # the failure is not recorded
        [warning] = logged("PAUSED instead of failing")
        assert warning.levelno == logging.WARNING
        for part in ("charge", "ValueError", "gateway down", f"workflow unpause {workflow_id}"):
            assert part in warning.getMessage()

        async def wait_for_result() -> None:
            results.append(await handle.get_result())

        nursery.start_soon(wait_for_result)
        # A waiter is told why it waits, and keeps waiting.
        await wait_until(lambda: logged(f"{workflow_id} is PAUSED"), timeout=HANG_GUARD)
        assert results == []
        fixed[0] = True
        assert await dbos.unpause_workflow(workflow_id) is True
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == "before charged"
        await wait_until(lambda: results == ["before charged"], timeout=HANG_GUARD)
        assert len(attempts) == 3  # the step ran again, once


async def test_run_step_takes_on_exhausted_pause_too(make_dbos: Callable[..., DBOS]) -> None:
    dbos = make_dbos()
    fixed = [False]
    workflow_id = f"inline-{uuid.uuid4().hex[:8]}"

    async def charge() -> str:
        if not fixed[0]:
            raise ValueError("gateway down")
        return "charged"

    @dbos.workflow()
    async def checkout() -> str:
        result: str = await dbos.run_step(
            charge, retries_allowed=True, max_attempts=2, interval_seconds=0, on_exhausted="pause"
        )
        return result

    async with dbos.launched():
        with SetWorkflowID(workflow_id):
            handle = await dbos.start_workflow(checkout)
        executor = executor_of(dbos)
        await wait_until(lambda: workflow_id not in executor.local, timeout=HANG_GUARD)
        assert (await dbos.get_workflow_status(workflow_id)).status == "PAUSED"  # type: ignore[union-attr]
        fixed[0] = True
        assert await dbos.unpause_workflow(workflow_id) is True
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == "charged"
        with pytest.raises(DBOSInvalidArgumentError, match="on_exhausted must be one of"):
            await dbos.run_step(charge, on_exhausted="explode")  # type: ignore[arg-type]


def test_a_bad_on_exhausted_is_refused_at_decoration(make_dbos: Callable[..., DBOS]) -> None:
    dbos = make_dbos()
    with pytest.raises(DBOSInvalidArgumentError, match="on_exhausted must be one of"):
        dbos.step(on_exhausted="explode")  # type: ignore[arg-type]


async def test_pause_refuses_finished_and_unknown_workflows_and_a_paused_one_can_be_cancelled(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def done() -> str:
        return "done"

    @dbos.workflow()
    async def waits() -> object:
        return await dbos.recv("go", timeout_seconds=3600)

    async with dbos.launched():
        with SetWorkflowID("finished"):
            assert await done() == "done"
        with SetWorkflowID("waiting"):
            await dbos.start_workflow(waits)
        async with Client(dbos_url) as client:
            with pytest.raises(DBOSException, match="SUCCESS: it has finished"):
                await client.pause_workflow("finished")
            with pytest.raises(DBOSException, match="SUCCESS: it has finished"):
                await client.unpause_workflow("finished")
            with pytest.raises(DBOSNonExistentWorkflowError):
                await client.pause_workflow("nobody")
            with pytest.raises(DBOSNonExistentWorkflowError):
                await client.unpause_workflow("nobody")
            with pytest.raises(DBOSException, match="no queue 'nowhere'"):
                await client.pause_queue("nowhere")
            with pytest.raises(DBOSException, match="cannot be paused"):
                await client.pause_queue("_dbos_internal_queue")
            assert (await client.get_workflow_status("finished")).status == "SUCCESS"  # type: ignore[union-attr]
            assert await client.pause_workflow("waiting") is True
        # Waiting in recv, it stops at once (in this process), with nothing recorded.
        executor = executor_of(dbos)
        await wait_until(lambda: "waiting" not in executor.local, timeout=HANG_GUARD)
        await dbos.cancel_workflow("waiting")
        assert (await dbos.get_workflow_status("waiting")).status == "CANCELLED"  # type: ignore[union-attr]


async def test_a_workflow_paused_in_a_durable_sleep_stops_at_once_and_keeps_its_wake_time(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # Virtual time on SQLite: a day's sleep, paused an hour in; two more hours pass while
    # paused. Unpaused, the sleep ends at the wake time it recorded (a day after it began),
    # not a fresh day later, and the step before it is not run again.
    dbos = DBOS(Config(app_name="pause-virtual", database_url=sqlite_url(tmp_path / "db.sqlite")))
    ran: list[str] = []

    @dbos.step()
    async def note(text: str) -> None:
        ran.append(text)

    @dbos.workflow()
    async def patient() -> str:
        await note("before")
        await dbos.sleep(DAY)
        await note("after")
        return "woke"

    async with dbos.launched():
        began = trio.current_time()
        with SetWorkflowID("patient"):
            handle = await dbos.start_workflow(patient)
        await trio.sleep(HOUR)  # virtual: the workflow is in its sleep by now
        assert ran == ["before"]
        assert await dbos.pause_workflow("patient") is True
        executor = executor_of(dbos)
        await wait_until(lambda: "patient" not in executor.local, timeout=HANG_GUARD)
        assert trio.current_time() - began < HOUR + 60  # stopped at once, not at the wake
        await trio.sleep(2 * HOUR)
        assert (await dbos.get_workflow_status("patient")).status == "PAUSED"  # type: ignore[union-attr]
        assert await dbos.unpause_workflow("patient") is True
        assert await handle.get_result() == "woke"
        elapsed = trio.current_time() - began
    assert ran == ["before", "after"]
    assert DAY <= elapsed < DAY + HOUR  # the recorded wake time, not a fresh day
