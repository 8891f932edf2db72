"""Crash recovery: the re-enqueue at launch, dead-lettering, and single ownership.

Executions are counted through a side table the step bodies write on their own
connection, never through the library's own bookkeeping. The crash and ownership tests
use real processes (``tests/support/scripts``): one killed with SIGKILL, one running as a second
executor on the same rows. Both run on SQLite too, where the processes share the
database file (WAL lets them; their writes take turns).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import (
    DBOS,
    Config,
    DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded,
    PickleSerializer,
    SetWorkflowID,
)
from dbos_trio._engine.runtime import watch

from support.backends import execute, query, status_row, steps_of
from support.queue_apps import APP_NAME, build_app, expected_three_steps
from support.queue_fixtures import SideTable, start_script
from support.waiting import wait_until

INTERNAL_QUEUE = "_dbos_internal_queue"


async def test_a_killed_processs_workflows_finish_in_a_fresh_launch_and_step_one_never_reruns(
    dbos_url: str,
) -> None:
    side = SideTable(dbos_url)
    side.create()
    count = 50
    crashed = start_script("recovery_crash.py", dbos_url, "crash-exec", str(count), "crash")
    try:

        async def all_step_one_checkpointed() -> bool:
            rows = await query(
                dbos_url,
                "SELECT count(*) FROM {t}operation_outputs "
                "WHERE function_id = 1 AND workflow_uuid LIKE 'crash-%%'",
            )
            return int(rows[0][0]) == count

        await wait_until(all_step_one_checkpointed, timeout=60, what="step 1 checkpoints")
    finally:
        crashed.kill()
    assert await crashed.wait() == -9, crashed.output()
    pending = await query(
        dbos_url,
        "SELECT count(*) FROM {t}workflow_status WHERE status = 'PENDING' "
        "AND executor_id = 'crash-exec'",
    )
    assert pending[0][0] == count
    # Nothing past step 1 was checkpointed, and no step 3 body ran before the crash.
    assert await query(
        dbos_url, "SELECT count(*) FROM {t}operation_outputs WHERE function_id > 1"
    ) == [(0,)]
    assert await side.count("step3") == 0

    app = build_app(dbos_url, executor_id="crash-exec", tag="recovered")
    async with app.dbos.launched():
        results = {}
        for i in range(count):
            handle = await app.dbos.retrieve_workflow(f"crash-{i}")
            results[i] = await handle.get_result()

    assert results == {i: expected_three_steps(i, "recovered") for i in range(count)}
    me = os.getpid()
    executions = await side.rows()
    for label, expected_pids in (
        ("step1", {crashed.pid}),
        ("step2", {me}),
        ("step3", {me}),
    ):
        by_workflow: dict[str, int] = {}
        for workflow_id, row_label, pid, *_ in executions:
            if row_label == label and pid in expected_pids:
                by_workflow[workflow_id] = by_workflow.get(workflow_id, 0) + 1
        assert by_workflow == {f"crash-{i}": 1 for i in range(count)}, label
    # step 1 never ran again in the fresh process; step 3 never ran in the killed one.
    assert not [r for r in executions if r[1] == "step1" and r[2] == me]
    assert not [r for r in executions if r[1] == "step3" and r[2] == crashed.pid]
    steps: dict[str, list[str]] = {}
    for workflow_id, name in await query(
        dbos_url,
        "SELECT workflow_uuid, function_name FROM {t}operation_outputs ORDER BY function_id",
    ):
        steps.setdefault(workflow_id, []).append(name)
    assert len(steps) == count
    for names in steps.values():
        assert names == ["qa.step1", "qa.step2", "qa.step3"]
    rows = await query(
        dbos_url,
        "SELECT status, executor_id, recovery_attempts, queue_name, count(*) "
        "FROM {t}workflow_status GROUP BY 1, 2, 3, 4",
    )
    assert rows == [("SUCCESS", "crash-exec", 2, INTERNAL_QUEUE, count)]


async def test_a_stale_execution_stops_at_its_next_checkpoint_and_returns_the_new_owners_outcome(
    dbos_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What is under test is the checkpoint's fence: A's watcher (which would stop A within a
    # second of the hand-over, racing B) is kept from looking.
    monkeypatch.setattr(watch, "WATCH_INTERVAL_SECONDS", 3600.0)
    side = SideTable(dbos_url)
    side.create()
    release = trio.Event()

    async def gate() -> None:
        await release.wait()

    # Executor A (this process) serves only the internal queue; B serves "handoff".
    app_a = build_app(dbos_url, executor_id="exec-a", tag="A", step2_gate=gate, listen_queues=[])
    spec = {
        "url": dbos_url,
        "executor_id": "exec-b",
        "tag": "B",
        "queues": {"handoff": {"polling_interval_sec": 0.05}},
        "listen_queues": ["handoff"],
    }
    worker_b = start_script("queue_worker.py", json.dumps(spec))
    outcome: dict[str, Any] = {}
    try:
        async with app_a.dbos.launched(), trio.open_nursery() as nursery:

            async def caller() -> None:
                with SetWorkflowID("owned-1"):
                    outcome["a"] = await app_a.three_steps(5)

            nursery.start_soon(caller)
            await worker_b.wait_for_line("READY")

            async def a_is_in_step_two() -> bool:
                return len(await side.rows("label = 'step2' AND value = 'A'")) == 1

            await wait_until(a_is_in_step_two, what="A to block in step 2")
            stale = await status_row(dbos_url, "owned-1")
            assert stale["status"] == "PENDING" and stale["executor_id"] == "exec-a"

            # Hand the row to B as recovery would (A still believes it owns it).
            changed = await execute(
                dbos_url,
                "UPDATE {t}workflow_status SET status = 'ENQUEUED', owner_xid = NULL, "
                "started_at_epoch_ms = NULL, queue_name = 'handoff' "
                "WHERE workflow_uuid = 'owned-1'",
            )
            assert changed == 1

            async def b_finished() -> bool:
                return (await status_row(dbos_url, "owned-1"))["status"] == "SUCCESS"

            await wait_until(b_finished, what="B to finish the workflow")
            won = await status_row(dbos_url, "owned-1")
            assert won["executor_id"] == "exec-b"
            assert won["owner_xid"] is None
            assert "a" not in outcome
            release.set()  # A's step 2 returns; its checkpoint must find it lost the row
    finally:
        await worker_b.stop()

    assert outcome["a"] == expected_three_steps(5, "B")
    assert [s[:2] for s in await steps_of(dbos_url, "owned-1")] == [
        (1, "qa.step1"),
        (2, "qa.step2"),
        (3, "qa.step3"),
    ]
    recorded = await query(
        dbos_url,
        "SELECT output FROM {t}operation_outputs "
        "WHERE workflow_uuid = 'owned-1' AND function_id = 2",
    )
    assert PickleSerializer().deserialize(recorded[0][0]) == "12B"
    executions = [(r[1], r[3]) for r in await side.rows()]
    # Both executors ran step 2's body; only B got as far as step 3.
    assert sorted(executions) == [
        ("step1", "5"),
        ("step2", "A"),
        ("step2", "B"),
        ("step3", expected_three_steps(5, "B").removeprefix("result:")),
    ]


async def _abandon(dbos_url: str, executor_id: str, start: Callable[[DBOS], Any]) -> None:
    """Run ``start`` in a launch of executor ``executor_id`` that then exits (rows stay PENDING)."""
    app = build_app(dbos_url, executor_id=executor_id, tag="x", step2_gate=trio.sleep_forever)
    async with app.dbos.launched():
        await start(app)

        async def blocked() -> bool:
            rows = await query(
                dbos_url,
                "SELECT count(*) FROM {t}workflow_status WHERE status <> 'PENDING'",
            )
            return rows[0][0] == 0

        await wait_until(blocked)


async def test_launch_reenqueues_only_this_executors_version_and_applications_pending_rows(
    dbos_url: str,
) -> None:
    side = SideTable(dbos_url)
    side.create()
    blocked = build_app(dbos_url, executor_id="me", tag="x", step2_gate=trio.sleep_forever)
    blocked.queues["orders"] = blocked.dbos.register_queue("orders", polling_interval_sec=0.05)
    ids = ["no-queue", "on-queue", "unclaimed", "other-exec", "other-version", "other-app"]
    async with blocked.dbos.launched():
        for workflow_id in ids:
            with SetWorkflowID(workflow_id):
                if workflow_id == "on-queue":
                    await blocked.queues["orders"].enqueue(blocked.three_steps, 1)
                else:
                    await blocked.dbos.start_workflow(blocked.three_steps, 1)

        async def all_blocked() -> bool:
            return len(await side.rows("label = 'step2'")) == len(ids)

        await wait_until(all_blocked)
    # The executor exited with everything PENDING; make some rows someone else's.
    await execute(
        dbos_url,
        "UPDATE {t}workflow_status SET application_name = NULL WHERE workflow_uuid = 'unclaimed'",
    )
    await execute(
        dbos_url,
        "UPDATE {t}workflow_status SET executor_id = 'them' WHERE workflow_uuid = 'other-exec'",
    )
    await execute(
        dbos_url,
        "UPDATE {t}workflow_status SET application_version = 'v0' "
        "WHERE workflow_uuid = 'other-version'",
    )
    await execute(
        dbos_url,
        "UPDATE {t}workflow_status SET application_name = 'other-app' "
        "WHERE workflow_uuid = 'other-app'",
    )
    before = {w: await status_row(dbos_url, w) for w in ids}
    assert {row["status"] for row in before.values()} == {"PENDING"}

    app = build_app(dbos_url, executor_id="me", tag="r")
    app.queues["orders"] = app.dbos.register_queue("orders", polling_interval_sec=0.05)
    async with app.dbos.launched():
        # Counted before launched() handed control back: no await has happened since.
        assert app.dbos._slot.executor is not None
        assert app.dbos._slot.executor.recovered_count == 3
        # A workflow started the instant launch returns shares the executor id; recovery
        # is over by then, so it is never mistaken for abandoned work.
        with SetWorkflowID("fresh"):
            fresh = await app.dbos.start_workflow(app.three_steps, 2)
        for workflow_id in ("no-queue", "on-queue", "unclaimed"):
            assert await (await app.dbos.retrieve_workflow(workflow_id)).get_result() == (
                expected_three_steps(1, "r")
            )
        assert await fresh.get_result() == expected_three_steps(2, "r")
    after = {w: await status_row(dbos_url, w) for w in ids}
    fresh_row = await status_row(dbos_url, "fresh")
    assert (fresh_row["queue_name"], fresh_row["recovery_attempts"]) == (None, 1)
    assert after["no-queue"]["queue_name"] == INTERNAL_QUEUE
    assert after["on-queue"]["queue_name"] == "orders"
    assert after["unclaimed"]["queue_name"] == INTERNAL_QUEUE
    for workflow_id in ("no-queue", "on-queue", "unclaimed"):
        row = after[workflow_id]
        assert row["status"] == "SUCCESS"
        assert row["recovery_attempts"] == before[workflow_id]["recovery_attempts"] + 1
        assert row["executor_id"] == "me"
    assert after["unclaimed"]["application_name"] == APP_NAME  # the claim adopted it
    for workflow_id in ("other-exec", "other-version", "other-app"):
        assert after[workflow_id] == before[workflow_id], workflow_id


async def test_with_max_recovery_attempts_3_three_recoveries_run_and_the_fourth_dead_letters(
    dbos_url: str,
) -> None:
    runs = 0
    started = trio.Event()

    def make() -> tuple[DBOS, Any]:
        dbos = DBOS(
            Config(app_name=APP_NAME, database_url=dbos_url, app_version="v1", executor_id="e")
        )

        @dbos.workflow(name="qa.crashy", max_recovery_attempts=3)
        async def crashy() -> None:
            nonlocal runs
            runs += 1
            started.set()
            await trio.sleep_forever()

        return dbos, crashy

    for launch in range(5):
        dbos, crashy = make()
        started = trio.Event()
        async with dbos.launched():
            if launch == 0:
                with SetWorkflowID("crashy-1"):
                    await dbos.start_workflow(crashy)
            if launch < 4:
                with trio.fail_after(10):
                    await started.wait()
                row = await status_row(dbos_url, "crashy-1")
                assert row["status"] == "PENDING"
                assert row["recovery_attempts"] == launch + 1
                continue

            async def dead_lettered() -> bool:
                row = await status_row(dbos_url, "crashy-1")
                return bool(row["status"] == "MAX_RECOVERY_ATTEMPTS_EXCEEDED")

            await wait_until(dead_lettered)
            handle = await dbos.retrieve_workflow("crashy-1")
            with pytest.raises(DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded) as raised:
                await handle.get_result()
            assert raised.value.dbos_error_code == 14
    assert runs == 4  # the first run and three recoveries; the fourth never ran
    row = await status_row(dbos_url, "crashy-1")
    assert row["status"] == "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
    assert row["recovery_attempts"] == 5
    assert row["queue_name"] is None
    assert row["owner_xid"] is None


async def test_a_recovered_row_naming_an_unregistered_workflow_is_left_enqueued_with_one_warning(
    dbos_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    side = SideTable(dbos_url)
    side.create()
    await _abandon(
        dbos_url,
        "me",
        lambda app: _start_with_id(app, "ghost-1"),
    )
    await execute(
        dbos_url,
        "UPDATE {t}workflow_status SET name = 'qa.not_registered_here' "
        "WHERE workflow_uuid = 'ghost-1'",
    )
    caplog.set_level(logging.WARNING)
    app = build_app(dbos_url, executor_id="me", tag="r")
    async with app.dbos.launched():
        # Other work still flows while the row waits.
        assert await app.three_steps(2) == expected_three_steps(2, "r")
        await trio.sleep(2.5)  # two supervisor sweeps and many internal-queue polls
        row = await status_row(dbos_url, "ghost-1")
    assert row["status"] == "ENQUEUED"
    assert row["queue_name"] == INTERNAL_QUEUE
    assert row["recovery_attempts"] == 1  # never claimed, so never counted
    warnings = [r for r in caplog.records if "qa.not_registered_here" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].levelno == logging.WARNING
    assert "ghost-1" in warnings[0].getMessage()


async def _start_with_id(app: Any, workflow_id: str) -> None:
    with SetWorkflowID(workflow_id):
        await app.dbos.start_workflow(app.three_steps, 1)
