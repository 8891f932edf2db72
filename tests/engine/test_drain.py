"""Graceful drain on virtual time (SQLite, ``autojump_clock``): on exit from ``launched()``
no new work is claimed, running workflows get ``drain_seconds`` (Trio clock) to finish,
and what still runs then is cancelled and stays PENDING for recovery.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import trio

from dbos_trio import DBOS, Config, DBOSConfigError, SetWorkflowID
from dbos_trio.testing import launched, sqlite_url

from support.backends import status_row


def make(tmp_path: Path, **config: object) -> tuple[DBOS, str]:
    url = sqlite_url(tmp_path / "drain.sqlite")
    return DBOS(Config(app_name="drain", database_url=url, **config)), url  # type: ignore[arg-type]


async def test_a_drain_lets_running_workflows_finish_and_claims_nothing_new(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    dbos, url = make(tmp_path, shutdown_drain_seconds=60)
    queue = dbos.register_queue("one-at-a-time", worker_concurrency=1)
    started: list[str] = []
    first_started = trio.Event()

    @dbos.step()
    async def slow(seconds: float) -> None:
        await trio.sleep(seconds)

    @dbos.workflow()
    async def job(name: str) -> str:
        started.append(name)
        first_started.set()
        await slow(5)
        return name

    async with launched(dbos):
        with SetWorkflowID("first"):
            await queue.enqueue(job, "first")
        with SetWorkflowID("second"):
            await queue.enqueue(job, "second")  # waits for the one slot
        with trio.fail_after(60):
            await first_started.wait()
        exit_at = trio.current_time()
    # The exit waited for "first" (5 s of step), and did not claim "second" once the
    # slot was free: it stays ENQUEUED for whichever executor comes next.
    assert 4.0 <= trio.current_time() - exit_at < 60
    assert started == ["first"]
    assert (await status_row(url, "first"))["status"] == "SUCCESS"
    assert (await status_row(url, "second"))["status"] == "ENQUEUED"


async def test_what_still_runs_when_the_drain_is_up_is_cancelled_and_stays_pending(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    dbos, url = make(tmp_path, shutdown_drain_seconds=5)
    finished: list[str] = []

    @dbos.step()
    async def pause(seconds: float) -> None:
        await trio.sleep(seconds)

    @dbos.workflow()
    async def job(seconds: float) -> str:
        await pause(seconds)
        finished.append(f"{seconds}")
        return "done"

    # The SIGTERM recipe of docs/operations.md: the block waits for the signal and then
    # leaves normally, so the exit drains for its 5 virtual seconds.
    async with launched(dbos):
        with trio.open_signal_receiver(signal.SIGTERM) as signals:
            with SetWorkflowID("short"):
                await dbos.start_workflow(job, 1)
            with SetWorkflowID("long"):
                await dbos.start_workflow(job, 30)
            os.kill(os.getpid(), signal.SIGTERM)
            async for _ in signals:
                break
        exit_at = trio.current_time()
    assert trio.current_time() - exit_at == pytest.approx(5, abs=0.5)
    assert finished == ["1"]
    assert (await status_row(url, "short"))["status"] == "SUCCESS"
    long_row = await status_row(url, "long")
    assert long_row["status"] == "PENDING"

    # The next launch recovers it and runs it to the end.
    async with launched(dbos):
        with trio.fail_after(120):
            assert await (await dbos.retrieve_workflow("long")).get_result() == "done"
    assert finished == ["1", "30"]


async def test_a_cancelled_block_does_not_drain_its_workflows_stop_at_once(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # Structured concurrency: cancelling the launched block from outside cancels the
    # workflows it runs too, at once; a drain needs the block to leave normally.
    dbos, url = make(tmp_path, shutdown_drain_seconds=60)

    @dbos.workflow()
    async def job() -> str:
        await trio.sleep(30)
        return "done"

    with trio.CancelScope() as stop:
        async with launched(dbos):
            with SetWorkflowID("cut"):
                await dbos.start_workflow(job)
            stop.cancel()
            exit_at = trio.current_time()
            await trio.sleep_forever()
    assert trio.current_time() - exit_at < 1
    assert (await status_row(url, "cut"))["status"] == "PENDING"


async def test_a_bad_drain_time_is_refused_before_anything_connects(tmp_path: Path) -> None:
    dbos, _ = make(tmp_path)
    for bad in (-1, 0, float("inf"), "5"):
        with pytest.raises(DBOSConfigError, match="drain_seconds"):
            async with dbos.launched(drain_seconds=bad):  # type: ignore[arg-type]
                pass
    with pytest.raises(DBOSConfigError, match="shutdown_drain_seconds"):
        Config(app_name="drain", shutdown_drain_seconds=0)
    assert not (tmp_path / "drain.sqlite").exists()
