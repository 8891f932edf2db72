"""The system-database protocol, one suite for both backends: schema, fencing, claims,
recovery, messages, events and streams.

Every test here runs twice, through the parametrized ``backend`` fixture: on PostgreSQL
(a fresh copy of a migrated template database) and on SQLite (a fresh copy of a migrated
file), each opened with :func:`~dbos_trio._sysdb.open.open_system_database` as ``DBOS``
opens it. The two backends share one implementation of the protocol, so what it promises
holds alike on both. Rows are looked at on a connection of the test's own, with the
backend-neutral helpers of :mod:`support.backends` (tables written ``{t}workflow_status``);
records and made-up times come from :mod:`support.sysdb_records`.

What only SQLite does (its file, WAL, busy locks, ``:memory:``, ``sqlite:///`` URLs, its
migration corpus) is ``tests/sysdb/test_sqlite_specific.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import trio

from dbos_trio import (
    DBOS,
    Config,
    DBOSNonExistentWorkflowError,
    DBOSQueueDeduplicatedError,
    DBOSStepNondeterminismError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
    SetWorkflowID,
    SystemDatabaseError,
)
from dbos_trio._core.admission import QueueConfig, RateLimit
from dbos_trio._sysdb.open import open_system_database
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.records import WorkflowFilters

from support.backends import backend_of, execute, query, status_row, steps_of
from support.sysdb_records import (
    APP,
    T0,
    caller,
    claim_request,
    parent_step,
    queued,
    step,
    workflow,
)
from support.waiting import wait_until


@pytest.fixture
def url(system_database_url: str) -> str:
    """The test's fresh, migrated system database, on this run's backend."""
    return system_database_url


@pytest.fixture
async def db(url: str) -> AsyncIterator[SystemDatabase]:
    """The system database at ``url``, opened as ``DBOS`` opens it; closed after the test."""
    opened = await open_system_database(url)
    try:
        yield opened
    finally:
        await opened.close()


# --- cancellation -------------------------------------------------------------------------


async def test_a_call_cancelled_before_it_runs_writes_nothing(db: SystemDatabase) -> None:
    with trio.CancelScope() as scope:
        scope.cancel()
        await db.init_workflow(workflow("w"), None)
    assert scope.cancelled_caught
    assert await db.get_outcome("w") is None


# --- starting workflows -------------------------------------------------------------------


async def test_init_creates_a_row_once_and_returns_it_untouched_afterwards(
    db: SystemDatabase, url: str
) -> None:
    first = await db.init_workflow(workflow("w"), None)
    again = await db.init_workflow(
        workflow("w", creator_xid="someone-else", name="other", recovery_attempts=7), None
    )
    assert first.created and not again.created
    assert (again.status, again.name) == ("PENDING", "wf")
    row = await status_row(url, "w")
    assert (row["recovery_attempts"], row["creator_xid"]) == (1, "creator-w")
    assert await query(url, "SELECT inputs FROM {t}workflow_input") == [("inputs-of-w",)]
    # The same creator retrying (its reply was lost) learns the row is its own.
    assert (await db.init_workflow(workflow("w"), None)).created


async def test_init_returns_the_stored_outcome_of_a_finished_workflow(
    db: SystemDatabase,
) -> None:
    await db.init_workflow(workflow("w"), None)
    assert await db.record_outcome(
        "w", "owner-w", status="SUCCESS", output="result", error=None, completed_at_ms=T0 + 5
    )
    found = await db.init_workflow(workflow("w", creator_xid="again"), None)
    assert (found.created, found.status, found.output, found.error) == (
        False,
        "SUCCESS",
        "result",
        None,
    )


async def test_a_deduplication_id_is_held_once_per_queue_until_the_holder_finishes(
    db: SystemDatabase,
) -> None:
    await db.init_workflow(queued("a", deduplication_id="d"), None)
    with pytest.raises(DBOSQueueDeduplicatedError):
        await db.init_workflow(queued("b", deduplication_id="d"), None)
    await db.init_workflow(queued("c", queue="other", deduplication_id="d"), None)
    assert await db.find_deduplicated("q", "d") == "a"
    [claimed] = await db.claim(claim_request())
    await db.record_outcome(
        "a", "claimer", status="SUCCESS", output="x", error=None, completed_at_ms=T0 + 9
    )
    assert (await db.init_workflow(queued("b", deduplication_id="d"), None)).created
    assert claimed.workflow_id == "a"


async def test_a_child_start_records_the_parents_checkpoint_under_the_parents_fence(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("p"), None)
    started = await db.init_workflow(workflow("p-1", parent_workflow_id="p"), parent_step())
    assert started.created and started.recorded_child_id == "p-1"
    assert await query(
        url,
        "SELECT function_id, function_name, child_workflow_id FROM {t}operation_outputs",
    ) == [(1, "child_wf", "p-1")]
    # A later execution starting another child at the same step id learns the first one.
    other = await db.init_workflow(workflow("p-1b", parent_workflow_id="p"), parent_step())
    assert other.recorded_child_id == "p-1"
    # A parent execution that lost ownership writes nothing at all.
    with pytest.raises(DBOSWorkflowConflictIDError):
        await db.init_workflow(workflow("p-2"), parent_step(2, owner="stale"))
    await db.cancel_workflows(["p"], T0 + 1)
    with pytest.raises(DBOSWorkflowCancelledError):
        await db.init_workflow(workflow("p-3"), parent_step(3))
    assert await query(
        url, "SELECT count(*) FROM {t}workflow_status WHERE workflow_uuid IN ('p-2', 'p-3')"
    ) == [(0,)]


# --- ownership fencing --------------------------------------------------------------------


async def test_only_the_owning_execution_records_steps(db: SystemDatabase, url: str) -> None:
    await db.init_workflow(workflow("w"), None)
    with pytest.raises(DBOSWorkflowConflictIDError):
        await db.record_step("stale", step(1), workflow_id="w", application_name=APP)
    with pytest.raises(DBOSWorkflowConflictIDError):
        await db.record_step("owner-w", step(1), workflow_id="missing", application_name=APP)
    await db.record_step("owner-w", step(1), workflow_id="w", application_name=APP)
    assert await db.cancel_workflows(["w"], T0 + 2) == ["w"]
    with pytest.raises(DBOSWorkflowCancelledError):
        await db.record_step("owner-w", step(2), workflow_id="w", application_name=APP)
    assert list(await db.load_steps("w")) == [1]
    assert (await status_row(url, "w"))["owner_xid"] is None


async def test_recording_the_same_step_again_is_harmless_and_a_different_one_is_refused(
    db: SystemDatabase,
) -> None:
    await db.init_workflow(workflow("w"), None)
    await db.record_step("owner-w", step(1), workflow_id="w", application_name=APP)
    await db.record_step("owner-w", step(1), workflow_id="w", application_name=APP)
    with pytest.raises(DBOSStepNondeterminismError):
        await db.record_step("owner-w", step(1, "other"), workflow_id="w", application_name=APP)


async def test_the_outcome_is_written_once_only_by_the_owner_of_a_pending_row(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("w", deduplication_id="d", queue_name="q"), None)

    async def finish(owner: str, output: str) -> bool:
        return await db.record_outcome(
            "w", owner, status="SUCCESS", output=output, error=None, completed_at_ms=T0 + 3
        )

    assert not await finish("stale", "theirs")
    assert await finish("owner-w", "ours")
    assert not await finish("owner-w", "twice")
    outcome = await db.get_outcome("w")
    assert outcome is not None and (outcome.status, outcome.output) == ("SUCCESS", "ours")
    row = await status_row(url, "w")
    assert (row["owner_xid"], row["deduplication_id"], row["completed_at"]) == (None, None, T0 + 3)


async def test_messages_events_and_streams_are_fenced_by_the_owner_too(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("w"), None)
    await db.init_workflow(workflow("dest"), None)
    stale = caller("w", 1, owner="stale")
    with pytest.raises(DBOSWorkflowConflictIDError):
        await db.send(
            destination_id="dest",
            topic="t",
            message="m",
            serialization=None,
            message_uuid="m1",
            now_ms=T0,
            caller=stale,
        )
    with pytest.raises(DBOSWorkflowConflictIDError):
        await db.set_event(stale, "k", "v", None, T0)
    with pytest.raises(DBOSWorkflowConflictIDError):
        await db.write_stream(stale, "s", "v", None, T0, step_name="DBOS.writeStream")
    with pytest.raises(DBOSWorkflowConflictIDError):
        await db.consume_message(caller("dest", 1, owner="stale"), "t", T0)
    for table in ("notifications", "workflow_events", "streams", "operation_outputs"):
        assert await query(url, "SELECT count(*) FROM {t}" + table) == [(0,)], table


# --- claims ------------------------------------------------------------------------------


async def test_a_claim_takes_rows_by_priority_then_age_and_stamps_the_attempt(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(queued("old", created_at_ms=T0, priority=5), None)
    await db.init_workflow(queued("urgent", created_at_ms=T0 + 50, priority=1), None)
    await db.init_workflow(queued("young", created_at_ms=T0 + 10, priority=5), None)
    await db.init_workflow(queued("timed", created_at_ms=T0 + 10, priority=5, timeout_ms=500), None)
    claimed = await db.claim(claim_request(now_ms=T0 + 100))
    assert [c.workflow_id for c in claimed] == ["urgent", "old", "young", "timed"]
    assert all(c.recovery_attempts == 1 for c in claimed)
    assert claimed[0].inputs == "inputs-of-urgent"
    assert claimed[3].deadline_epoch_ms == T0 + 600
    row = await status_row(url, "old")
    assert (row["status"], row["owner_xid"], row["executor_id"], row["started_at_epoch_ms"]) == (
        "PENDING",
        "claimer",
        "exec-2",
        T0 + 100,
    )
    assert await db.claim(claim_request()) == []


async def test_a_claim_spends_no_more_than_the_local_budget_and_global_concurrency(
    db: SystemDatabase,
) -> None:
    for i in range(6):
        await db.init_workflow(queued(f"w{i}", created_at_ms=T0 + i), None)
    assert len(await db.claim(claim_request(local_budget=2))) == 2
    # Two PENDING already count against a global limit of 3, whoever runs them.
    assert len(await db.claim(claim_request(global_concurrency=3))) == 1
    assert await db.claim(claim_request(global_concurrency=3)) == []
    await db.record_outcome(
        "w0", "claimer", status="SUCCESS", output=None, error=None, completed_at_ms=T0 + 9
    )
    assert [c.workflow_id for c in await db.claim(claim_request(global_concurrency=3))] == ["w3"]


async def test_a_claim_honours_the_rate_limit_window_finished_runs_included(
    db: SystemDatabase,
) -> None:
    for i in range(7):
        await db.init_workflow(queued(f"w{i}", created_at_ms=T0 + i), None)
    limited = {"rate_limit_max": 3, "rate_limit_period_ms": 60_000, "rate_limited": True}
    first = await db.claim(claim_request(now_ms=T0 + 1000, **limited))
    assert len(first) == 3
    for claimed in first:
        await db.record_outcome(
            claimed.workflow_id,
            "claimer",
            status="SUCCESS",
            output=None,
            error=None,
            completed_at_ms=T0 + 1001,
        )
    assert await db.claim(claim_request(now_ms=T0 + 59_000, **limited)) == []
    assert len(await db.claim(claim_request(now_ms=T0 + 61_001, **limited))) == 3
    assert len(await db.claim(claim_request(now_ms=T0 + 61_002, **limited))) == 0


async def test_a_partition_claim_takes_its_partition_within_its_budgets(
    db: SystemDatabase,
) -> None:
    for i in range(3):
        await db.init_workflow(queued(f"a{i}", queue_partition_key="a", created_at_ms=T0 + i), None)
        await db.init_workflow(queued(f"b{i}", queue_partition_key="b", created_at_ms=T0 + i), None)
    assert await db.list_partitions("q") == ["a", "b"]
    claimed = await db.claim(claim_request(partition_key="a", partition_concurrency=2))
    assert [c.workflow_id for c in claimed] == ["a0", "a1"]
    assert {c.partition_key for c in claimed} == {"a"}
    assert await db.claim(claim_request(partition_key="a", partition_concurrency=2)) == []
    limited = await db.claim(
        claim_request(
            partition_key="b",
            partition_rate_limit_max=1,
            partition_rate_limit_period_ms=1000,
            rate_limited=True,
        )
    )
    assert [c.workflow_id for c in limited] == ["b0"]


async def test_a_claim_takes_its_own_version_and_version_less_rows_only_when_latest(
    db: SystemDatabase,
) -> None:
    await db.init_workflow(queued("mine", application_version="v1"), None)
    await db.init_workflow(queued("any", application_version=None), None)
    await db.init_workflow(queued("newer", application_version="v2"), None)
    not_latest = await db.claim(claim_request(runs_latest_version=False))
    assert [c.workflow_id for c in not_latest] == ["mine"]
    assert [c.workflow_id for c in await db.claim(claim_request())] == ["any"]


async def test_a_claim_takes_rows_of_its_application_or_unclaimed_and_of_known_workflows(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(queued("ours", created_at_ms=T0), None)
    await db.init_workflow(queued("nobodys", application_name=None, created_at_ms=T0 + 1), None)
    await db.init_workflow(queued("theirs", application_name="other"), None)
    await db.init_workflow(queued("unknown", name="not_registered"), None)
    claimed = await db.claim(claim_request())
    assert [c.workflow_id for c in claimed] == ["ours", "nobodys"]
    assert (await status_row(url, "nobodys"))["application_name"] == APP  # claimed for us


async def test_a_closed_database_fails_as_a_system_database_error(
    db: SystemDatabase,
) -> None:
    await db.close()
    with pytest.raises(SystemDatabaseError):
        await db.get_outcome("w")


# --- recovery and dead letters -------------------------------------------------------------


async def test_recovery_reenqueues_this_executors_pending_rows_of_this_version_only(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("direct"), None)
    await db.init_workflow(queued("queued"), None)
    await db.claim(claim_request(executor_id="exec"))
    await db.init_workflow(workflow("elsewhere", executor_id="exec-9"), None)
    await db.init_workflow(workflow("old", application_version="v0"), None)
    await db.init_workflow(workflow("foreign", application_name="other"), None)
    assert await db.reenqueue_abandoned("exec", "v1", APP, T0 + 5) == 2
    assert (
        (await status_row(url, "direct"))["status"],
        (await status_row(url, "direct"))["queue_name"],
    ) == (
        "ENQUEUED",
        "_dbos_internal_queue",
    )
    assert (await status_row(url, "queued"))["queue_name"] == "q"
    assert (await status_row(url, "queued"))["owner_xid"] is None
    for untouched in ("elsewhere", "old", "foreign"):
        assert (await status_row(url, untouched))["status"] == "PENDING"
    [again] = await db.claim(claim_request(queue="_dbos_internal_queue"))
    assert (again.workflow_id, again.recovery_attempts) == ("direct", 2)


async def test_a_row_is_dead_lettered_only_if_its_attempts_did_not_move(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(queued("w", deduplication_id="d"), None)
    [claimed] = await db.claim(claim_request())
    assert not await db.dead_letter("w", claimed.recovery_attempts + 1, T0 + 7)
    assert await db.dead_letter("w", claimed.recovery_attempts, T0 + 7)
    row = await status_row(url, "w")
    assert (row["status"], row["queue_name"], row["deduplication_id"], row["completed_at"]) == (
        "MAX_RECOVERY_ATTEMPTS_EXCEEDED",
        None,
        None,
        T0 + 7,
    )


async def test_the_timeout_sweep_cancels_expired_rows_of_its_application(
    db: SystemDatabase,
) -> None:
    await db.init_workflow(workflow("late", deadline_epoch_ms=T0 + 10), None)
    await db.init_workflow(workflow("early", deadline_epoch_ms=T0 + 99), None)
    await db.init_workflow(workflow("theirs", deadline_epoch_ms=T0, application_name="x"), None)
    assert await db.sweep_timeouts(APP, T0 + 50) == ["late"]
    assert await db.sweep_timeouts(APP, T0 + 50) == []


async def test_delayed_rows_are_released_when_due(db: SystemDatabase) -> None:
    await db.init_workflow(queued("d", status="DELAYED", delay_until_epoch_ms=T0 + 100), None)
    assert await db.release_delayed(APP, T0 + 99) == 0
    assert await db.set_workflow_delay("d", T0 + 200, T0 + 99)
    assert await db.release_delayed(APP, T0 + 150) == 0
    assert await db.release_delayed(APP, T0 + 200) == 1


# --- messages, events, streams -----------------------------------------------------------


async def test_messages_are_received_oldest_first_and_kept_as_consumed(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("dest"), None)
    for i in range(3):  # the same millisecond: insertion order decides
        await db.send(
            destination_id="dest",
            topic="t",
            message=f"m{i}",
            serialization="portable_json",
            message_uuid=f"id{i}",
            now_ms=T0,
            caller=None,
        )
    assert await db.has_message("dest", "t") and not await db.has_message("dest", "u")
    received = [await db.consume_message(caller("dest", i), "t", T0 + 1) for i in (1, 3, 5, 7)]
    assert received == [
        ("m0", "portable_json"),
        ("m1", "portable_json"),
        ("m2", "portable_json"),
        None,
    ]
    assert await query(
        url, "SELECT message, consumed, consumed_by_function_id FROM {t}notifications ORDER BY 1"
    ) == [("m0", 1, 1), ("m1", 1, 3), ("m2", 1, 5)]
    steps = await db.load_steps("dest")
    assert [(s.function_id, s.function_name, s.output) for s in steps.values()] == [
        (1, "DBOS.recv", "m0"),
        (3, "DBOS.recv", "m1"),
        (5, "DBOS.recv", "m2"),
    ]


async def test_a_message_id_is_delivered_once_and_a_missing_destination_is_refused(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("sender"), None)
    await db.init_workflow(workflow("dest"), None)
    for function_id in (1, 1):  # a retried send from the same step
        await db.send(
            destination_id="dest",
            topic="t",
            message="hello",
            serialization=None,
            message_uuid="key::dest",
            now_ms=T0,
            caller=caller("sender", function_id),
        )
    assert await query(url, "SELECT count(*) FROM {t}notifications") == [(1,)]
    assert [s.function_name for s in (await db.load_steps("sender")).values()] == ["DBOS.send"]
    with pytest.raises(DBOSNonExistentWorkflowError):
        await db.send(
            destination_id="nobody",
            topic="t",
            message="lost",
            serialization=None,
            message_uuid="x",
            now_ms=T0,
            caller=caller("sender", 2),
        )
    assert list(await db.load_steps("sender")) == [1]


async def test_the_latest_event_value_wins_and_the_history_keeps_each_step(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("w"), None)
    await db.set_event(caller("w", 1), "k", "one", "py_pickle", T0)
    await db.set_event(caller("w", 2), "k", "two", "py_pickle", T0)
    in_step = attrs.evolve(caller("w", 3), record=False)
    await db.set_event(in_step, "k", "three", "py_pickle", T0)
    assert await db.get_event("w", "k") == ("three", "py_pickle")
    assert await query(
        url, "SELECT function_id, value FROM {t}workflow_events_history ORDER BY 1"
    ) == [
        (1, "one"),
        (2, "two"),
        (3, "three"),
    ]
    assert [s.function_name for s in (await db.load_steps("w")).values()] == [
        "DBOS.setEvent",
        "DBOS.setEvent",
    ]


async def test_stream_offsets_start_at_zero_and_reads_stop_at_a_gap(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("w"), None)
    for i in range(3):
        await db.write_stream(
            caller("w", i + 1), "s", f"v{i}", None, T0, step_name="DBOS.writeStream"
        )
    batch = await db.read_stream("w", "s", 1, 10)
    assert (batch.writer_status, batch.values) == ("PENDING", ((1, "v1", None), (2, "v2", None)))
    await execute(url, 'DELETE FROM {t}streams WHERE "offset" = 1')
    assert (await db.read_stream("w", "s", 0, 10)).values == ((0, "v0", None),)
    assert (await db.read_stream("missing", "s", 0, 10)).writer_status is None


async def test_deleting_a_workflow_removes_its_rows_from_every_table(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("w"), None)
    await db.record_step("owner-w", step(1), workflow_id="w", application_name=APP)
    await db.set_event(caller("w", 2), "k", "v", None, T0)
    await db.write_stream(caller("w", 3), "s", "v", None, T0, step_name="DBOS.writeStream")
    await db.send(
        destination_id="w",
        topic="t",
        message="m",
        serialization=None,
        message_uuid="m",
        now_ms=T0,
        caller=None,
    )
    await db.record_outcome(
        "w", "owner-w", status="SUCCESS", output="o", error=None, completed_at_ms=T0
    )
    await db.delete_workflows(["w"])
    for table in (
        "workflow_status",
        "workflow_input",
        "workflow_output",
        "operation_outputs",
        "notifications",
        "workflow_events",
        "workflow_events_history",
        "streams",
    ):
        assert await query(url, "SELECT count(*) FROM {t}" + table) == [(0,)], table


async def test_listing_filters_like_postgres(db: SystemDatabase) -> None:
    for i, workflow_id in enumerate(("abc-1", "ABC-2", "abd_3", "a%c")):
        await db.init_workflow(workflow(workflow_id, created_at_ms=T0 + i), None)

    async def ids(**filters: Any) -> list[str]:
        return [row.workflow_id for row in await db.list_workflows(WorkflowFilters(**filters))]

    assert await ids(workflow_id_prefix="abc") == ["abc-1"]  # case-sensitive
    assert await ids(workflow_id_prefix="a%") == ["a%c"]  # no wildcards
    assert await ids(offset=1, sort_desc=True) == ["abd_3", "ABC-2", "abc-1"]
    assert await ids(workflow_ids=("abd_3", "abc-1", "nope")) == ["abc-1", "abd_3"]
    [row] = await db.list_workflows(WorkflowFilters(workflow_ids=("abc-1",)))
    assert row.was_forked_from is False and row.inputs == "inputs-of-abc-1"


async def test_a_fork_copies_the_checkpoints_events_and_streams_before_its_start_step(
    db: SystemDatabase, url: str
) -> None:
    await db.init_workflow(workflow("w"), None)
    await db.record_step("owner-w", step(1), workflow_id="w", application_name=APP)
    await db.set_event(caller("w", 2), "k", "early", None, T0)
    await db.write_stream(caller("w", 3), "s", "v", None, T0, step_name="DBOS.writeStream")
    await db.set_event(caller("w", 4), "k", "late", None, T0)
    fork: dict[str, Any] = {
        "start_step": 4,
        "application_version": None,
        "queue_name": "_dbos_internal_queue",
        "queue_partition_key": None,
        "timeout_ms": None,
        "application_name": APP,
        "now_ms": T0 + 1,
    }
    assert await db.fork_workflow(original_id="w", forked_id="f", **fork)
    assert not await db.fork_workflow(original_id="missing", forked_id="g", **fork)
    assert list(await db.load_steps("f")) == [1, 2, 3]
    assert await db.get_event("f", "k") == ("early", None)
    assert (await db.read_stream("f", "s", 0, 10)).values == ((0, "v", None),)
    assert (await status_row(url, "w"))["was_forked_from"] == 1
    assert (
        (await status_row(url, "f"))["status"],
        (await status_row(url, "f"))["forked_from"],
    ) == (
        "ENQUEUED",
        "w",
    )


async def test_queues_are_upserted_listed_and_owned_per_application(
    db: SystemDatabase,
) -> None:
    limited = QueueConfig(name="q", limiter=RateLimit(5, 60.0), application_name=APP)
    await db.upsert_queue(limited, overwrite=True)
    await db.upsert_queue(attrs.evolve(limited, worker_concurrency=2), overwrite=False)
    assert await db.get_queue("q") == limited  # not overwritten
    await db.upsert_queue(attrs.evolve(limited, worker_concurrency=2), overwrite=True)
    stored = await db.get_queue("q")
    assert stored is not None and stored.worker_concurrency == 2
    from dbos_trio import DBOSException

    with pytest.raises(DBOSException, match="belongs to application"):
        await db.upsert_queue(attrs.evolve(limited, application_name="other"), overwrite=True)
    assert [q.name for q in await db.list_queues("other")] == []
    assert await db.delete_queue("q") and not await db.delete_queue("q")


async def test_the_latest_registered_version_runs_version_less_rows(
    db: SystemDatabase,
) -> None:
    assert await db.register_application_version(APP, "v1")
    assert await db.register_application_version(APP, "v2")
    assert not await db.register_application_version(APP, "v1")
    assert await db.latest_version(APP) == "v2"


async def test_a_version_stamped_later_by_another_writer_stays_the_latest(
    db: SystemDatabase, url: str
) -> None:
    await execute(
        url,
        "INSERT INTO {t}application_versions (version_id, version_name, version_timestamp, "
        "application_name) VALUES ('x', 'future', %s, %s)",
        4_000_000_000_000,  # the year 2096: stamped by a clock ahead of ours
        APP,
    )
    assert not await db.register_application_version(APP, "v1")
    assert await db.latest_version(APP) == "future"


# --- the same behaviour through DBOS ------------------------------------------------------


async def test_a_workflow_with_steps_messages_events_and_streams_ends_alike_on_both_backends(
    system_database_url: str,
) -> None:
    dbos = DBOS(Config(app_name="both-backends", database_url=system_database_url))

    @dbos.step(name="double")
    async def double(x: int) -> int:
        return 2 * x

    @dbos.workflow()
    async def worker(x: int) -> int:
        doubled = await double(x)
        await dbos.set_event("doubled", doubled)
        await dbos.write_stream("numbers", doubled)
        await dbos.close_stream("numbers")
        message = await dbos.recv("go", timeout_seconds=10)
        return doubled + message

    async with dbos.launched():
        with SetWorkflowID("both-1"):
            handle = await dbos.start_workflow(worker, 21)
        assert await dbos.get_event("both-1", "doubled", timeout_seconds=10) == 42
        assert [v async for v in dbos.read_stream("both-1", "numbers")] == [42]

        # Sent once recv found nothing and recorded its deadline (DBOS.sleep): a message
        # already there would be taken without one.
        async def deadline_recorded() -> bool:
            return "DBOS.sleep" in [row[1] for row in await steps_of(system_database_url, "both-1")]

        await wait_until(deadline_recorded, timeout=20)
        await dbos.send("both-1", 100, "go")
        assert await handle.get_result() == 142
        steps = [s.function_name for s in await dbos.list_workflow_steps("both-1")]
    assert steps == [
        "double",
        "DBOS.setEvent",
        "DBOS.writeStream",
        "DBOS.closeStream",
        "DBOS.recv",
        "DBOS.sleep",
    ]
    assert await query(
        system_database_url,
        "SELECT status, recovery_attempts FROM {t}workflow_status WHERE workflow_uuid = %s",
        "both-1",
    ) == [("SUCCESS", 1)]


async def test_a_queue_respects_worker_concurrency_alike_on_both_backends(
    system_database_url: str,
) -> None:
    dbos = DBOS(Config(app_name="both-backends", database_url=system_database_url))
    running = 0
    most = 0

    @dbos.workflow()
    async def job(i: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await trio.sleep(0.02)
        running -= 1
        return i

    queue = dbos.register_queue("pair", worker_concurrency=2)
    async with dbos.launched():
        handles = [await queue.enqueue(job, i) for i in range(6)]
        assert [await h.get_result() for h in handles] == list(range(6))
    assert most == 2
    if backend_of(system_database_url) == "sqlite":
        assert dbos.config.resolved_database_url().startswith("sqlite:///")
