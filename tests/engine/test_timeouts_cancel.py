"""Timeouts, cancellation, resume, delete and delay.

A workflow running in this process is stopped through its Trio cancel scope, so one
blocked in ``sleep``, ``recv`` or a long async step stops at once; one running elsewhere
stops at its next checkpoint. Either way its row ends CANCELLED with nothing recorded as
its outcome, and waiters see :class:`DBOSAwaitedWorkflowCancelledError`. Side effects are
counted in the test, outside the library's bookkeeping.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from dbos_trio import (
    DBOS,
    DBOSAwaitedWorkflowCancelledError,
    DBOSNonExistentWorkflowError,
    SetEnqueueOptions,
    SetWorkflowID,
    SetWorkflowTimeout,
)
from dbos_trio._clock import Clock
from dbos_trio._sysdb.records import NULL_TOPIC
from dbos_trio._sysdb.wakeups import message_key

from support.backends import execute, query, status_row, steps_of
from support.time_fixtures import GLACIAL_RECHECK, Stopwatch, running, wait_for_waiter
from support.waiting import HANG_GUARD, wait_until


async def assert_cancelled_without_outcome(url: str, workflow_id: str) -> dict[str, Any]:
    row = await status_row(url, workflow_id)
    assert row["status"] == "CANCELLED"
    assert row["owner_xid"] is None
    assert row["error"] is None and row["output"] is None
    stored = await query(
        url, "SELECT output, error FROM {t}workflow_output WHERE workflow_uuid = %s", workflow_id
    )
    assert stored in ([], [(None, None)])
    return row


class TickingClock(Clock):
    """The executor's clock, but a millisecond further at every reading: any start that
    read it twice would show it."""

    __slots__ = ("_ticks",)

    def __init__(self) -> None:
        super().__init__()
        self._ticks = 0

    def now(self) -> float:
        self._ticks += 1
        return super().now() + self._ticks / 1000


async def test_a_direct_starts_deadline_is_its_created_at_plus_the_timeout_exactly(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def quick() -> int:
        return 1

    async with running(dbos):
        executor = dbos._require_executor("test")
        real_clock = executor.clock
        executor.clock = TickingClock()
        try:
            workflow_id = str(uuid.uuid4())
            with SetWorkflowTimeout(60), SetWorkflowID(workflow_id):
                assert await quick() == 1
        finally:
            executor.clock = real_clock
        row = await status_row(db_url, workflow_id)
        assert row["workflow_timeout_ms"] == 60_000
        assert row["workflow_deadline_epoch_ms"] == row["created_at"] + 60_000


async def test_a_workflow_past_its_timeout_is_cancelled_and_awaiting_it_raises(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    loops = 0

    @dbos.workflow()
    async def blocked() -> None:
        nonlocal loops
        while True:
            loops += 1
            await dbos.sleep(0.1)

    async with running(dbos):
        direct = str(uuid.uuid4())
        with (
            SetWorkflowTimeout(0.3),
            SetWorkflowID(direct),
            pytest.raises(DBOSAwaitedWorkflowCancelledError),
        ):
            await blocked()
        row = await assert_cancelled_without_outcome(db_url, direct)
        assert row["workflow_timeout_ms"] == 300
        assert row["workflow_deadline_epoch_ms"] == row["created_at"] + 300
        # Cancelled by its deadline, not before it (the row's last change is the cancel).
        assert row["updated_at"] >= row["workflow_deadline_epoch_ms"]
        assert loops >= 1

        with SetWorkflowTimeout(0.3):
            handle = await dbos.start_workflow(blocked)
        status = await handle.get_status()
        assert status.workflow_timeout_ms == 300
        assert status.workflow_deadline_epoch_ms is not None
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        await assert_cancelled_without_outcome(db_url, handle.workflow_id)


async def test_a_timeout_cancels_the_workflow_and_its_children_which_inherit_its_deadline(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    started_child, direct_child = str(uuid.uuid4()), str(uuid.uuid4())

    @dbos.workflow()
    async def blocked_child() -> None:
        await trio.sleep_forever()  # no checkpoint to notice the deadline at

    @dbos.workflow()
    async def parent() -> None:
        with SetWorkflowID(started_child):
            await dbos.start_workflow(blocked_child)
        with SetWorkflowID(direct_child):
            await blocked_child()

    # The timeout sweep is ten minutes away: whatever is cancelled within the guard was
    # cancelled by its own deadline, not by a sweep.
    async with running(dbos, sweeps_every=GLACIAL_RECHECK):
        parent_id = str(uuid.uuid4())
        clock = Stopwatch()
        with (
            trio.fail_after(HANG_GUARD),
            SetWorkflowTimeout(0.5),
            SetWorkflowID(parent_id),
            pytest.raises(DBOSAwaitedWorkflowCancelledError),
        ):
            await parent()
        assert clock() > 0.45  # not before the deadline

        parent_row = await assert_cancelled_without_outcome(db_url, parent_id)
        # The direct child (same task, same deadline) is CANCELLED by the time the parent's
        # caller hears of it: it did not wait for the sweep.
        assert (await status_row(db_url, direct_child))["status"] == "CANCELLED"
        for child in (started_child, direct_child):
            with trio.fail_after(HANG_GUARD), pytest.raises(DBOSAwaitedWorkflowCancelledError):
                await (await dbos.retrieve_workflow(child)).get_result()
            child_row = await assert_cancelled_without_outcome(db_url, child)
            # The child inherits the parent's absolute deadline, not its timeout.
            assert (
                child_row["workflow_deadline_epoch_ms"]
                == (parent_row["workflow_deadline_epoch_ms"])
            )
            assert child_row["workflow_timeout_ms"] is None


async def test_a_child_may_opt_out_of_its_parents_deadline(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def child() -> str:
        return "child done"

    @dbos.workflow()
    async def parent() -> str:
        with SetWorkflowTimeout(None):
            handle = await dbos.start_workflow(child)
        return await handle.get_result()

    async with running(dbos):
        with SetWorkflowTimeout(5):
            handle = await dbos.start_workflow(parent)
        assert await handle.get_result() == "child done"
        rows = await query(
            db_url,
            "SELECT workflow_deadline_epoch_ms FROM {t}workflow_status "
            "WHERE parent_workflow_id = %s",
            handle.workflow_id,
        )
        assert rows == [(None,)]


async def test_the_timeout_sweep_cancels_expired_workflows_whose_executor_is_gone(
    new_dbos: Callable[..., DBOS], db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def noop() -> None:
        pass

    async with running(dbos):
        app = dbos.app_name
        ids = {
            name: str(uuid.uuid4()) for name in ("own", "unclaimed", "other", "future", "queued")
        }
        for workflow_id in ids.values():
            with SetWorkflowID(workflow_id):
                await noop()
        executor = dbos._require_executor("test")
        # Each pass of the sweep: whether it began after the rows below expired, and what
        # it cancelled.
        passes: list[tuple[bool, list[str]]] = []
        expired_rows_written = False
        sweep_timeouts = executor.sysdb.sweep_timeouts

        async def recorded_pass(application_name: str, now_ms: int) -> list[str]:
            began_after = expired_rows_written
            cancelled = await sweep_timeouts(application_name, now_ms)
            passes.append((began_after, cancelled))
            return cancelled

        monkeypatch.setattr(executor.sysdb, "sweep_timeouts", recorded_pass)
        now_ms = executor.clock.now_ms()
        past, future = now_ms - 1000, now_ms + 3_600_000
        for name, status, owner, deadline, queue in [
            ("own", "PENDING", app, past, None),
            ("unclaimed", "PENDING", None, past, None),
            ("other", "PENDING", app + "-other", past, None),
            ("future", "PENDING", app, future, None),
            ("queued", "ENQUEUED", app, past, "nobody-polls-this"),
        ]:
            await execute(
                db_url,
                "UPDATE {t}workflow_status SET status = %s, executor_id = 'dead-executor', "
                "owner_xid = 'dead-owner', application_name = %s, "
                "workflow_deadline_epoch_ms = %s, queue_name = %s WHERE workflow_uuid = %s",
                status,
                owner,
                deadline,
                queue,
                ids[name],
            )
        expired_rows_written = True

        async def swept() -> bool:
            statuses = [
                (await status_row(db_url, ids[name]))["status"]
                for name in ("own", "unclaimed", "queued")
            ]
            return statuses == ["CANCELLED"] * 3

        await wait_until(swept, timeout=HANG_GUARD)
        # The next pass cancelled them (the passes are one interval, 1 s +-10 %, apart):
        # everything up to the first pass that began after they expired.
        first_after = next(i for i, (after, _) in enumerate(passes) if after)
        cancelled = {wid for _, cancelled in passes[: first_after + 1] for wid in cancelled}
        assert cancelled == {ids["own"], ids["unclaimed"], ids["queued"]}
        assert (await status_row(db_url, ids["other"]))["status"] == "PENDING"
        assert (await status_row(db_url, ids["future"]))["status"] == "PENDING"
        queued = await status_row(db_url, ids["queued"])
        assert queued["queue_name"] is None and queued["owner_xid"] is None


Blocker = Callable[[DBOS], Awaitable[None]]


# Far past the hang guard: a blocked workflow that stops within it was cancelled.
BLOCKED_SECONDS = 10 * HANG_GUARD


async def block_in_sleep(dbos: DBOS) -> None:
    await dbos.sleep(BLOCKED_SECONDS)


async def block_in_recv(dbos: DBOS) -> None:
    await dbos.recv(timeout_seconds=BLOCKED_SECONDS)


def long_step(dbos: DBOS) -> Blocker:
    @dbos.step()
    async def slow_step() -> None:
        await trio.sleep(BLOCKED_SECONDS)

    async def block(dbos: DBOS) -> None:
        await slow_step()

    return block


@pytest.mark.parametrize("blocked_in", ["sleep", "recv", "step"])
async def test_cancelling_a_workflow_running_here_stops_it_at_once(
    new_dbos: Callable[..., DBOS], db_url: str, notify: bool, blocked_in: str
) -> None:
    dbos = new_dbos(use_listen_notify=notify)
    blocker = {"sleep": block_in_sleep, "recv": block_in_recv, "step": long_step(dbos)}[blocked_in]
    reached = trio.Event()
    after_block = 0

    @dbos.workflow()
    async def blocked() -> None:
        nonlocal after_block
        reached.set()
        await blocker(dbos)
        after_block += 1

    async with running(dbos):
        handle = await dbos.start_workflow(blocked)
        await reached.wait()
        if blocked_in == "recv":
            await wait_for_waiter(dbos, message_key(handle.workflow_id, NULL_TOPIC))
        await trio.sleep(0.1)
        await dbos.cancel_workflow(handle.workflow_id)
        # Within the guard, not the ten minutes it was blocked for.
        with trio.fail_after(HANG_GUARD), pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        assert dbos._require_executor("test").local.get(handle.workflow_id) is None
        assert after_block == 0
        await assert_cancelled_without_outcome(db_url, handle.workflow_id)
        names = [s[1] for s in await steps_of(db_url, handle.workflow_id)]
        assert "slow_step" not in " ".join(names)  # a preempted step records nothing


async def test_a_workflow_cancelled_from_another_process_stops_at_its_next_checkpoint(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    runner = new_dbos(executor_id="runner")
    operator = new_dbos(executor_id="operator")
    loops = 0

    @runner.workflow()
    async def looping() -> None:
        nonlocal loops
        while True:
            loops += 1
            await runner.sleep(0.1)

    # The runner's watcher and sweeps ten minutes apart: within the guard only its own
    # next DBOS.sleep checkpoint, finding the row no longer owned, can stop the loop.
    async with running(runner, sweeps_every=GLACIAL_RECHECK), running(operator):
        handle = await runner.start_workflow(looping)
        await wait_until(lambda: loops >= 2)
        await operator.cancel_workflow(handle.workflow_id)
        with trio.fail_after(HANG_GUARD), pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        await wait_until(
            lambda: runner._require_executor("t").local.get(handle.workflow_id) is None
        )
        stopped_at = loops
        await trio.sleep(0.3)
        assert loops == stopped_at
        await assert_cancelled_without_outcome(db_url, handle.workflow_id)


async def test_cancel_then_resume_completes_the_workflow_running_each_step_once(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    runs = {"one": 0, "slow": 0, "slow_done": 0, "two": 0}
    gate = trio.Event()
    in_slow = trio.Event()

    @dbos.step()
    async def step_one() -> None:
        runs["one"] += 1

    @dbos.step()
    async def slow_step() -> None:
        runs["slow"] += 1
        in_slow.set()
        await gate.wait()
        runs["slow_done"] += 1

    @dbos.step()
    async def step_two() -> None:
        runs["two"] += 1

    @dbos.workflow()
    async def workflow(x: int) -> int:
        await step_one()
        await slow_step()
        await step_two()
        return x

    async with running(dbos):
        handle = await dbos.start_workflow(workflow, 5)
        await in_slow.wait()
        await dbos.cancel_workflow(handle.workflow_id)
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        assert runs == {"one": 1, "slow": 1, "slow_done": 0, "two": 0}

        gate.set()
        resumed = await dbos.resume_workflow(handle.workflow_id)
        assert await resumed.get_result() == 5
        # step_one was checkpointed before the cancel and is not run again; the step that
        # was preempted recorded nothing, so it runs (once, to completion) on resume.
        assert runs == {"one": 1, "slow": 2, "slow_done": 1, "two": 1}
        row = await status_row(db_url, handle.workflow_id)
        assert row["status"] == "SUCCESS"
        assert [s[1] for s in await steps_of(db_url, handle.workflow_id)] == [
            step_one.__qualname__,
            slow_step.__qualname__,
            step_two.__qualname__,
        ]

        # Resuming a finished workflow changes nothing; a missing one raises.
        again = await dbos.resume_workflow(handle.workflow_id)
        assert await again.get_result() == 5
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.resume_workflow(str(uuid.uuid4()))


async def test_cancel_children_cancels_the_whole_tree(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    started = trio.Event()

    @dbos.workflow()
    async def grandchild() -> None:
        started.set()
        await dbos.sleep(30)

    @dbos.workflow()
    async def child() -> None:
        await grandchild()

    @dbos.workflow()
    async def root() -> None:
        await dbos.start_workflow(child)
        await dbos.sleep(30)

    async with running(dbos):
        handle = await dbos.start_workflow(root)
        await started.wait()
        await dbos.cancel_workflow(handle.workflow_id, cancel_children=True)
        child_id = f"{handle.workflow_id}-1"
        grandchild_id = f"{child_id}-1"
        for workflow_id in (handle.workflow_id, child_id, grandchild_id):
            with pytest.raises(DBOSAwaitedWorkflowCancelledError):
                await (await dbos.retrieve_workflow(workflow_id)).get_result()
            await assert_cancelled_without_outcome(db_url, workflow_id)


async def test_a_cancelled_caller_leaves_a_workflow_pending_rather_than_cancelled(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    """A Trio cancel scope is not ``cancel_workflow``: the caller gave up, the workflow did
    not fail, so the row stays PENDING for recovery and nothing is recorded."""
    dbos = new_dbos()

    @dbos.workflow()
    async def sleeper() -> str:
        await dbos.sleep(0.5)
        return "woke"

    async with running(dbos):
        workflow_id = str(uuid.uuid4())
        with trio.move_on_after(0.2), SetWorkflowID(workflow_id):
            await sleeper()
        row = await status_row(db_url, workflow_id)
        assert row["status"] == "PENDING"
        assert row["output"] is None and row["error"] is None
        assert [s[1] for s in await steps_of(db_url, workflow_id)] == ["DBOS.sleep"]
        assert dbos._require_executor("test").local.get(workflow_id) is None


async def test_delete_removes_a_workflow_and_everything_it_wrote(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()

    @dbos.workflow()
    async def child() -> None:
        await dbos.set_event("k", "v")

    @dbos.workflow()
    async def writer() -> None:
        await dbos.set_event("k", "v")
        await dbos.write_stream("s", 1)
        await child()

    async with running(dbos):
        handle = await dbos.start_workflow(writer)
        await handle.get_result()
        await dbos.send(handle.workflow_id, "m")
        child_id = f"{handle.workflow_id}-3"
        await dbos.delete_workflow(handle.workflow_id)
        assert await dbos.get_workflow_status(handle.workflow_id) is None
        assert await dbos.get_workflow_status(child_id) is not None
        for table in (
            "operation_outputs",
            "workflow_events",
            "workflow_events_history",
            "streams",
            "workflow_input",
            "workflow_output",
        ):
            rows = await query(
                db_url,
                f"SELECT count(*) FROM {{t}}{table} WHERE workflow_uuid = %s",
                handle.workflow_id,
            )
            assert rows == [(0,)], table
        assert await query(
            db_url,
            "SELECT count(*) FROM {t}notifications WHERE destination_uuid = %s",
            handle.workflow_id,
        ) == [(0,)]

        other = await dbos.start_workflow(writer)
        await other.get_result()
        await dbos.delete_workflow(other.workflow_id, delete_children=True)
        assert await dbos.get_workflow_status(f"{other.workflow_id}-3") is None


async def test_set_workflow_delay_moves_a_delayed_workflows_start(
    new_dbos: Callable[..., DBOS], db_url: str
) -> None:
    dbos = new_dbos()
    queue = dbos.register_queue("delayed-queue", polling_interval_sec=0.1)

    @dbos.workflow()
    async def later() -> str:
        return "ran"

    async with running(dbos):
        with SetEnqueueOptions(delay_seconds=3600):
            handle = await queue.enqueue(later)
        assert (await handle.get_status()).status == "DELAYED"
        await dbos.set_workflow_delay(handle.workflow_id, delay_seconds=0.2)
        # Run within the guard: the hour's delay was replaced by the new 0.2 s.
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == "ran"
