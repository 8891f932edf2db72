"""Durable queues: registration, every queue control, and bad input.

Each test runs one executor in this process on its own database and asserts what can be
observed: results, the rows in ``workflow_status``/``queues``, and a side table the step
bodies write (so concurrency is measured outside the library). Polling intervals are
short to keep the tests fast; the supervisor sweep (1 s) bounds how quickly queue-set
changes (new/deleted queues, released delays, version changes) are seen.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest
import trio

from dbos_trio import (
    DBOS,
    Config,
    DBOSAwaitedWorkflowCancelledError,
    DBOSException,
    DBOSQueueDeduplicatedError,
    SetEnqueueOptions,
    SetWorkflowID,
    SetWorkflowTimeout,
)
from dbos_trio._core.admission import (
    QueueConfig,
    RateLimit,
    RunningCounts,
    local_budget,
    next_poll_interval,
)
from dbos_trio._sysdb.postgres.backend import claim_statement
from dbos_trio._sysdb.records import TURN_HEAD, TURN_TOKEN

from support.backends import execute, query, status_row
from support.queue_apps import APP_NAME, App, build_app, expected_three_steps
from support.queue_fixtures import SideTable, max_overlap
from support.waiting import HANG_GUARD, wait_until

INTERNAL_QUEUE = "_dbos_internal_queue"
FAST = 0.05  # polling interval for queues under test


def gated_app(url: str, **kwargs: Any) -> tuple[App, trio.Event]:
    """The shared test app whose ``three_steps`` blocks in step 2 until the event is set."""
    release = trio.Event()

    async def gate() -> None:
        await release.wait()

    return build_app(url, executor_id="me", tag="t", step2_gate=gate, **kwargs), release


async def insert_foreign_row(
    url: str,
    workflow_id: str,
    queue_name: str,
    *,
    status: str = "PENDING",
    partition: str | None = None,
    started_at_ms: int | None = None,
    rate_limited: bool = False,
) -> None:
    """A row another executor owns (its workflow runs elsewhere; nothing here touches it)."""
    await execute(
        url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, queue_name, "
        "executor_id, application_name, application_version, queue_partition_key, "
        "started_at_epoch_ms, rate_limited, owner_xid) "
        "VALUES (%s, %s, 'qa.elsewhere', %s, 'them', %s, 'v1', %s, %s, %s, 'their-token')",
        workflow_id,
        status,
        queue_name,
        APP_NAME,
        partition,
        started_at_ms,
        rate_limited,
    )


async def statuses(url: str, prefix: str) -> dict[str, str]:
    rows = await query(
        url,
        "SELECT workflow_uuid, status FROM {t}workflow_status WHERE workflow_uuid LIKE %s",
        prefix + "%",
    )
    return dict(rows)


# --- registration -------------------------------------------------------------------


async def test_register_queue_upserts_its_row_at_launch_with_the_configured_columns(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="t",
        queues={
            "orders": {
                "global_concurrency": 10,
                "worker_concurrency": 4,
                "limiter": (50, 2.5),
                "polling_interval_sec": 0.5,
            },
            "parts": {
                "partition_concurrency": 2,
                "partition_worker_concurrency": 1,
                "partition_limiter": (3, 1.5),
            },
        },
    )
    columns = (
        "name, concurrency, worker_concurrency, rate_limit_max, rate_limit_period_sec, "
        "priority_enabled, partition_queue, polling_interval_sec, application_name, "
        "partition_concurrency, partition_worker_concurrency, partition_rate_limit_max, "
        "partition_rate_limit_period_sec"
    )
    assert await query(dbos_url, "SELECT count(*) FROM {t}queues") == [(0,)]
    async with app.dbos.launched():
        rows = await query(dbos_url, f"SELECT {columns} FROM {{t}}queues ORDER BY name")
        listed = {q.name: q.config for q in await app.dbos.list_queues()}
        retrieved = await app.dbos.retrieve_queue("orders")
    assert rows == [
        ("orders", 10, 4, 50, 2.5, True, False, 0.5, APP_NAME, None, None, None, None),
        ("parts", None, None, None, None, True, True, 1.0, APP_NAME, 2, 1, 3, 1.5),
    ]
    assert listed == {"orders": app.queues["orders"].config, "parts": app.queues["parts"].config}
    assert retrieved is not None
    assert retrieved.worker_concurrency == 4
    assert retrieved.limiter == RateLimit(limit=50, period=2.5)

    # A later launch of the (latest) version overwrites the configuration.
    changed = build_app(
        dbos_url, executor_id="me", tag="t", queues={"orders": {"worker_concurrency": 7}}
    )
    async with changed.dbos.launched():
        pass
    assert await query(
        dbos_url,
        "SELECT concurrency, worker_concurrency, rate_limit_max FROM {t}queues "
        "WHERE name = 'orders'",
    ) == [(None, 7, None)]


async def test_registering_a_queue_another_application_owns_fails_at_launch(
    dbos_url: str,
) -> None:
    await execute(
        dbos_url,
        "INSERT INTO {t}queues (name, application_name, worker_concurrency) "
        "VALUES ('orders', 'other-app', 9)",
    )
    app = build_app(
        dbos_url, executor_id="me", tag="t", queues={"orders": {"worker_concurrency": 3}}
    )
    with pytest.raises(DBOSException, match="other-app"):
        async with app.dbos.launched():
            pytest.fail("launch should have failed")
    assert not app.dbos.is_launched
    assert await query(dbos_url, "SELECT application_name, worker_concurrency FROM {t}queues") == [
        ("other-app", 9)
    ]


# --- concurrency ----------------------------------------------------------------------


async def test_global_concurrency_counts_pending_rows_of_every_executor(dbos_url: str) -> None:
    side = SideTable(dbos_url)
    side.create()
    app, release = gated_app(
        dbos_url, queues={"g": {"global_concurrency": 2, "polling_interval_sec": FAST}}
    )
    await insert_foreign_row(dbos_url, "them-1", "g")
    async with app.dbos.launched():
        handles = []
        for i in range(3):
            with SetWorkflowID(f"g-{i}"):
                handles.append(await app.queues["g"].enqueue(app.three_steps, i))

        async def blocked(n: int) -> bool:
            return await side.count("step2") == n

        await wait_until(lambda: blocked(1), what="one workflow to start")
        await trio.sleep(0.5)  # many polls: the foreign PENDING row holds the second slot
        assert await side.count("step2") == 1
        assert sorted((await statuses(dbos_url, "g-")).values()) == [
            "ENQUEUED",
            "ENQUEUED",
            "PENDING",
        ]

        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'SUCCESS' WHERE workflow_uuid = 'them-1'",
        )
        await wait_until(lambda: blocked(2), what="the freed slot to be used")
        await trio.sleep(0.3)
        assert await side.count("step2") == 2  # the cap is 2, now both ours
        release.set()
        assert [await h.get_result() for h in handles] == [
            expected_three_steps(i, "t") for i in range(3)
        ]


async def test_worker_concurrency_caps_this_process_and_ignores_other_executors(
    dbos_url: str,
) -> None:
    side = SideTable(dbos_url)
    side.create()
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="w",
        queues={"w": {"worker_concurrency": 2, "polling_interval_sec": FAST}},
    )
    for i in range(3):  # other executors' running workflows do not count here
        await insert_foreign_row(dbos_url, f"them-{i}", "w")
    async with app.dbos.launched():
        handles = [await app.queues["w"].enqueue(app.hold, 0.15) for _ in range(6)]
        for handle in handles:
            assert (await handle.get_result()).startswith("w:")
    intervals = [(r[4], r[5]) for r in await side.rows("label = 'hold'")]
    assert len(intervals) == 6
    assert max_overlap(intervals) == 2


async def test_a_changed_queues_row_takes_effect_at_the_workers_next_poll(dbos_url: str) -> None:
    side = SideTable(dbos_url)
    app, release = gated_app(
        dbos_url, queues={"dyn": {"worker_concurrency": 1, "polling_interval_sec": FAST}}
    )
    async with app.dbos.launched():
        handles = [await app.queues["dyn"].enqueue(app.three_steps, i) for i in range(3)]
        await wait_until(lambda: _count_is(side, "step2", 1))
        await trio.sleep(0.3)
        assert await side.count("step2") == 1
        # Another executor (or an operator) raises the limit in the shared table.
        await execute(dbos_url, "UPDATE {t}queues SET worker_concurrency = 3 WHERE name = 'dyn'")
        await wait_until(lambda: _count_is(side, "step2", 3), timeout=HANG_GUARD)
        release.set()
        for handle in handles:
            await handle.get_result()


async def test_a_worker_slot_is_freed_however_the_workflow_ends(dbos_url: str) -> None:
    side = SideTable(dbos_url)
    app, _never_released = gated_app(
        dbos_url, queues={"one": {"worker_concurrency": 1, "polling_interval_sec": 3600}}
    )

    @app.dbos.workflow(name="qa.fails")
    async def fails() -> None:
        raise ValueError("no")

    @app.dbos.workflow(name="qa.noop")
    async def noop(i: int) -> int:
        return i

    async with app.dbos.launched():
        queue = app.queues["one"]
        with pytest.raises(ValueError):
            await (await queue.enqueue(fails)).get_result()
        with SetWorkflowID("stuck"):
            stuck = await queue.enqueue(app.three_steps, 1)
        waiting = await queue.enqueue(noop, 2)
        await wait_until(lambda: _count_is(side, "step2", 1))
        assert (await waiting.get_status()).status == "ENQUEUED"
        await app.dbos.cancel_workflow("stuck")
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await stuck.get_result()
        with trio.fail_after(HANG_GUARD):  # the freed slot wakes the worker: no hourly poll
            assert await waiting.get_result() == 2
        assert app.dbos._slot.executor is not None
        assert app.dbos._slot.executor.running.running("one") == 0


async def test_a_limiter_allows_n_starts_per_period_counting_finished_rate_limited_rows(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="r",
        queues={"rl": {"limiter": (2, 0.6), "polling_interval_sec": FAST}},
    )

    @app.dbos.workflow(name="qa.noop")
    async def noop(i: int) -> int:
        return i

    # Two starts a moment ago, long finished, by another executor: they use this window.
    earlier = int(time.time() * 1000)
    for i in range(2):
        await insert_foreign_row(
            dbos_url, f"them-{i}", "rl", status="SUCCESS", started_at_ms=earlier, rate_limited=True
        )
    async with app.dbos.launched():
        handles = [await app.queues["rl"].enqueue(noop, i) for i in range(5)]
        assert [await h.get_result() for h in handles] == list(range(5))
    rows = await query(
        dbos_url,
        "SELECT started_at_epoch_ms, rate_limited FROM {t}workflow_status "
        "WHERE queue_name = 'rl' ORDER BY started_at_epoch_ms",
    )
    assert all(limited for _, limited in rows)
    starts = [started for started, _ in rows]
    assert len(starts) == 7
    assert min(starts[2:]) - earlier >= 600  # nothing of ours started in the foreign window
    for first, third in zip(starts, starts[2:], strict=False):
        assert third - first >= 600, starts


# --- ordering, deduplication --------------------------------------------------------------


async def test_priority_runs_lower_numbers_first_and_fifo_within_a_priority(
    dbos_url: str,
) -> None:
    side = SideTable(dbos_url)
    side.create()
    app, release = gated_app(
        dbos_url, queues={"p": {"worker_concurrency": 1, "polling_interval_sec": FAST}}
    )
    order: list[str] = []

    @app.dbos.workflow(name="qa.record")
    async def record(label: str) -> None:
        order.append(label)

    async with app.dbos.launched():
        queue = app.queues["p"]
        blocker = await queue.enqueue(app.three_steps, 0)
        await wait_until(lambda: _count_is(side, "step2", 1), what="the blocker to start")
        handles = []
        for label, priority in (
            ("a5", 5),
            ("b1", 1),
            ("c5", 5),
            ("d1", 1),
            ("e-default", None),
            ("f-max", 2**31 - 1),
            ("g1", 1),
        ):
            with SetEnqueueOptions(priority=priority):
                handles.append(await queue.enqueue(record, label))
            # FIFO is by created_at, a millisecond clock: two enqueues within one
            # millisecond have no defined order (as upstream).
            await trio.sleep(0.002)
        rows = await query(
            dbos_url,
            "SELECT priority FROM {t}workflow_status WHERE name = 'qa.record' "
            "ORDER BY created_at, workflow_uuid",
        )
        assert sorted(r[0] for r in rows) == [0, 1, 1, 1, 5, 5, 2**31 - 1]
        release.set()
        await blocker.get_result()
        for handle in handles:
            await handle.get_result()
    assert order == ["e-default", "b1", "d1", "g1", "a5", "c5", "f-max"]


async def _count_is(side: SideTable, label: str, n: int) -> bool:
    return await side.count(label) == n


async def test_a_deduplication_id_admits_one_active_workflow_per_queue_until_it_ends(
    dbos_url: str,
) -> None:
    side = SideTable(dbos_url)
    side.create()
    app, release = gated_app(dbos_url, queues={"d": {"polling_interval_sec": FAST}})

    @app.dbos.workflow(name="qa.fails")
    async def fails() -> None:
        raise ValueError("no")

    async with app.dbos.launched():
        queue = app.queues["d"]
        with SetEnqueueOptions(deduplication_id="dd"), SetWorkflowID("dedup-1"):
            first = await queue.enqueue(app.three_steps, 1)
        with (
            SetEnqueueOptions(deduplication_id="dd"),
            SetWorkflowID("dedup-2"),
            pytest.raises(DBOSQueueDeduplicatedError) as refused,
        ):
            await queue.enqueue(app.three_steps, 2)
        assert refused.value.dbos_error_code == 12
        assert (
            "Workflow dedup-2 was deduplicated due to an existing workflow in queue d with "
            "deduplication ID dd." in str(refused.value)
        )
        with (
            SetEnqueueOptions(deduplication_id="dd", duplication_policy="return-existing"),
            SetWorkflowID("dedup-3"),
        ):
            existing = await queue.enqueue(app.three_steps, 3)
        assert existing.workflow_id == "dedup-1"
        # Another id on the same queue, or no id, is not affected.
        with SetEnqueueOptions(deduplication_id="other"):
            other = await queue.enqueue(app.three_steps, 4)
        assert set(await statuses(dbos_url, "dedup-")) == {"dedup-1"}
        assert (await status_row(dbos_url, "dedup-1"))["deduplication_id"] == "dd"

        release.set()
        assert await first.get_result() == expected_three_steps(1, "t")
        assert await existing.get_result() == expected_three_steps(1, "t")
        await other.get_result()
        # SUCCESS frees the id.
        assert (await status_row(dbos_url, "dedup-1"))["deduplication_id"] is None
        with SetEnqueueOptions(deduplication_id="dd"), SetWorkflowID("dedup-4"):
            assert await (await queue.enqueue(app.three_steps, 4)).get_result()

        # ERROR frees it.
        with SetEnqueueOptions(deduplication_id="de"), SetWorkflowID("dedup-e1"):
            failed = await queue.enqueue(fails)
        with pytest.raises(ValueError):
            await failed.get_result()
        assert (await status_row(dbos_url, "dedup-e1"))["deduplication_id"] is None
        with SetEnqueueOptions(deduplication_id="de"), SetWorkflowID("dedup-e2"):
            await queue.enqueue(fails)

        # A DELAYED row holds its id; CANCELLED frees it.
        with SetEnqueueOptions(deduplication_id="dc", delay_seconds=60), SetWorkflowID("dedup-c1"):
            await queue.enqueue(app.three_steps, 5)
        with (
            SetEnqueueOptions(deduplication_id="dc"),
            SetWorkflowID("dedup-c2"),
            pytest.raises(DBOSQueueDeduplicatedError),
        ):
            await queue.enqueue(app.three_steps, 5)
        await app.dbos.cancel_workflow("dedup-c1")
        cancelled = await status_row(dbos_url, "dedup-c1")
        assert (cancelled["status"], cancelled["deduplication_id"]) == ("CANCELLED", None)
        with SetEnqueueOptions(deduplication_id="dc"), SetWorkflowID("dedup-c3"):
            assert await (await queue.enqueue(app.three_steps, 6)).get_result()


# --- delay and timeouts ---------------------------------------------------------------


async def test_a_delayed_enqueue_waits_as_delayed_then_runs_after_its_delay(
    dbos_url: str,
) -> None:
    # A queue polled once an hour: only the dequeue supervisor's sweep (every second),
    # which releases the row and wakes the queue's worker, can run it within the guard.
    app = build_app(
        dbos_url, executor_id="me", tag="t", queues={"q": {"polling_interval_sec": 3600}}
    )

    @app.dbos.workflow(name="qa.noop")
    async def noop(i: int) -> int:
        return i

    async with app.dbos.launched():
        with SetEnqueueOptions(delay_seconds=0.8), SetWorkflowID("later"):
            handle = await app.queues["q"].enqueue(noop, 7)
        row = await status_row(dbos_url, "later")
        assert row["status"] == "DELAYED"
        assert row["delay_until_epoch_ms"] - row["created_at"] == 800
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == 7
    row = await status_row(dbos_url, "later")
    assert row["status"] == "SUCCESS"
    assert row["started_at_epoch_ms"] >= row["delay_until_epoch_ms"]  # not before its delay


async def test_a_zero_delay_still_enqueues_as_delayed_like_dbos_3_4(dbos_url: str) -> None:
    app = build_app(dbos_url, executor_id="me", tag="t0", queues={"q": {}})

    @app.dbos.workflow(name="qa.noop0")
    async def noop(i: int) -> int:
        return i

    async with app.dbos.launched():
        with SetEnqueueOptions(delay_seconds=0), SetWorkflowID("zero-delay"):
            handle = await app.queues["q"].enqueue(noop, 3)
        row = await status_row(dbos_url, "zero-delay")
        # Written DELAYED, due at once: the supervisor, woken by the DELAYED row, may
        # already have released it (rows leave DELAYED at their time, not at a sweep).
        assert row["delay_until_epoch_ms"] == row["created_at"]
        assert row["status"] in ("DELAYED", "ENQUEUED", "PENDING", "SUCCESS")
        assert await handle.get_result() == 3


async def test_a_workflow_timeout_set_at_enqueue_starts_counting_at_dequeue(
    dbos_url: str,
) -> None:
    side = SideTable(dbos_url)
    side.create()
    app, release = gated_app(
        dbos_url, queues={"t": {"worker_concurrency": 1, "polling_interval_sec": FAST}}
    )

    @app.dbos.workflow(name="qa.quick")
    async def quick() -> str:
        return "done"

    @app.dbos.workflow(name="qa.slow")
    async def slow() -> str:
        await trio.sleep(5)
        return "too late"

    async with app.dbos.launched():
        queue = app.queues["t"]
        blocker = await queue.enqueue(app.three_steps, 0)
        await wait_until(lambda: _count_is(side, "step2", 1))
        with SetWorkflowTimeout(0.5):
            with SetWorkflowID("quick"):
                quick_handle = await queue.enqueue(quick)
            with SetWorkflowID("slow"):
                slow_handle = await queue.enqueue(slow)
        for workflow_id in ("quick", "slow"):
            row = await status_row(dbos_url, workflow_id)
            assert (row["status"], row["workflow_timeout_ms"]) == ("ENQUEUED", 500)
            assert row["workflow_deadline_epoch_ms"] is None
        await trio.sleep(0.8)  # longer than the timeout, spent waiting in the queue
        assert (await status_row(dbos_url, "quick"))["status"] == "ENQUEUED"
        release.set()
        await blocker.get_result()
        assert await quick_handle.get_result() == "done"
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await slow_handle.get_result()
    for workflow_id, status in (("quick", "SUCCESS"), ("slow", "CANCELLED")):
        row = await status_row(dbos_url, workflow_id)
        assert row["status"] == status
        assert row["workflow_deadline_epoch_ms"] is not None
        if status == "SUCCESS":
            assert row["workflow_deadline_epoch_ms"] == row["started_at_epoch_ms"] + 500


# --- which executor serves what -----------------------------------------------------------


async def test_listen_queues_limits_the_queues_this_executor_serves(dbos_url: str) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="t",
        queues={"a": {"polling_interval_sec": FAST}, "b": {"polling_interval_sec": FAST}},
        listen_queues=["a"],
    )
    async with app.dbos.launched():
        with SetWorkflowID("on-b"):
            await app.queues["b"].enqueue(app.three_steps, 2)
        with SetWorkflowID("on-a"):
            on_a = await app.queues["a"].enqueue(app.three_steps, 1)
        assert await on_a.get_result() == expected_three_steps(1, "t")
        await trio.sleep(1.5)  # past a supervisor sweep
        assert (await status_row(dbos_url, "on-b"))["status"] == "ENQUEUED"
        assert app.dbos._slot.executor is not None
        assert app.dbos._slot.executor.queue_set.served == {"a", INTERNAL_QUEUE}


async def test_rows_of_another_version_wait_and_versionless_rows_run_only_on_the_latest(
    dbos_url: str,
) -> None:
    # A newer version of this application exists: v1 is not the latest.
    await execute(
        dbos_url,
        "INSERT INTO {t}application_versions (version_id, version_name, version_timestamp, "
        "application_name) VALUES ('newer', 'v2', %s, %s)",
        int(time.time() * 1000) + 3_600_000,
        APP_NAME,
    )
    app = build_app(
        dbos_url, executor_id="me", tag="t", queues={"q": {"polling_interval_sec": FAST}}
    )
    async with app.dbos.launched():
        for workflow_id, version in (("old", "v0"), ("versionless", "parked"), ("mine", None)):
            with SetWorkflowID(workflow_id), SetEnqueueOptions(app_version=version):
                await app.queues["q"].enqueue(app.three_steps, 3)
        assert (await status_row(dbos_url, "old"))["application_version"] == "v0"
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET application_version = NULL "
            "WHERE workflow_uuid = 'versionless'",
        )
        assert await (await app.dbos.retrieve_workflow("mine")).get_result()
        await trio.sleep(1.2)
        assert (await status_row(dbos_url, "versionless"))["status"] == "ENQUEUED"

        # v1 becomes the latest again: the next sweep notices, and the row runs as v1.
        await execute(dbos_url, "DELETE FROM {t}application_versions WHERE version_id = 'newer'")
        handle = await app.dbos.retrieve_workflow("versionless")
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == expected_three_steps(3, "t")
        old = await status_row(dbos_url, "old")
    versionless = await status_row(dbos_url, "versionless")
    assert versionless["application_version"] == "v1"
    assert (old["status"], old["application_version"]) == ("ENQUEUED", "v0")


async def test_a_local_enqueue_is_dequeued_without_waiting_for_the_polling_interval(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="t",
        queues={"slow-poll": {"polling_interval_sec": 3600, "worker_concurrency": 1}},
    )

    @app.dbos.workflow(name="qa.noop")
    async def noop(i: int) -> int:
        return i

    async with app.dbos.launched():
        await trio.sleep(0.3)  # the worker has made its first poll and now waits an hour
        # Within the guard, when the next poll is an hour away: the enqueue woke the worker.
        with trio.fail_after(HANG_GUARD):
            assert await (await app.queues["slow-poll"].enqueue(noop, 1)).get_result() == 1
            # With worker_concurrency 1, each finished workflow frees the slot and wakes
            # the worker for the next one.
            handles = [await app.queues["slow-poll"].enqueue(noop, i) for i in range(5)]
            assert [await h.get_result() for h in handles] == list(range(5))


# --- managing queues ------------------------------------------------------------------------


async def test_list_retrieve_and_delete_queues_and_a_deleted_queue_stops_being_served(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="t",
        queues={
            "keep": {"worker_concurrency": 3, "polling_interval_sec": FAST},
            "drop": {"polling_interval_sec": FAST},
        },
    )
    async with app.dbos.launched():
        assert [q.name for q in await app.dbos.list_queues()] == ["drop", "keep"]
        kept = await app.dbos.retrieve_queue("keep")
        assert kept is not None and kept.worker_concurrency == 3
        assert await app.dbos.retrieve_queue("never-registered") is None

        await app.dbos.delete_queue("drop")
        assert await app.dbos.retrieve_queue("drop") is None
        assert [q.name for q in await app.dbos.list_queues()] == ["keep"]
        await trio.sleep(1.2)  # the next sweep drops the queue's worker
        assert app.dbos._slot.executor is not None
        assert "drop" not in app.dbos._slot.executor.queue_set.working
        with SetWorkflowID("orphan"):
            await app.dbos.enqueue_workflow("drop", app.three_steps, 1)
        assert await (await kept.enqueue(app.three_steps, 2)).get_result()
        await trio.sleep(0.5)
        assert (await status_row(dbos_url, "orphan"))["status"] == "ENQUEUED"


# --- bad input ------------------------------------------------------------------------------


BAD_QUEUE_OPTIONS: list[tuple[dict[str, Any], str]] = [
    ({"name": "_dbos_mine"}, "reserved"),
    ({"name": "_dbos_internal_queue"}, "reserved"),
    ({"name": ""}, "non-empty"),
    ({"global_concurrency": 0}, "global_concurrency"),
    ({"worker_concurrency": -1}, "worker_concurrency"),
    ({"worker_concurrency": True}, "worker_concurrency"),
    ({"worker_concurrency": 1.5}, "worker_concurrency"),
    ({"partition_concurrency": 0}, "partition_concurrency"),
    ({"partition_worker_concurrency": -2}, "partition_worker_concurrency"),
    ({"polling_interval_sec": 0}, "polling_interval_sec"),
    ({"polling_interval_sec": -1.0}, "polling_interval_sec"),
    ({"limiter": {"limit": 1, "period": 1.0}}, "limiter"),
    ({"global_concurrency": 2, "worker_concurrency": 3}, "global_concurrency"),
    ({"global_concurrency": 2, "partition_concurrency": 3}, "global_concurrency"),
    ({"partition_concurrency": 1, "partition_worker_concurrency": 2}, "partition_concurrency"),
    ({"worker_concurrency": 1, "partition_worker_concurrency": 2}, "worker_concurrency"),
]


@pytest.mark.parametrize(("options", "problem"), BAD_QUEUE_OPTIONS)
def test_register_queue_rejects_bad_configuration_with_value_error(
    options: dict[str, Any], problem: str
) -> None:
    # Registration happens before launch: nothing is written until a launch upserts.
    dbos = DBOS(Config(app_name=APP_NAME, database_url="postgresql://nobody@127.0.0.1:1/none"))
    arguments = {"name": "q", **options}
    with pytest.raises(ValueError, match=problem):
        dbos.register_queue(**arguments)


@pytest.mark.parametrize(
    ("limiter", "problem"),
    [
        (RateLimit(0, 1.0), "limiter.limit"),
        (RateLimit(-1, 1.0), "limiter.limit"),
        (RateLimit(1, 0), "limiter.period"),
        (RateLimit(1, -0.5), "limiter.period"),
        (RateLimit(1, float("inf")), "limiter.period"),
    ],
)
def test_register_queue_needs_a_limiter_with_a_positive_limit_and_period(
    limiter: RateLimit, problem: str
) -> None:
    dbos = DBOS(Config(app_name=APP_NAME, database_url="postgresql://nobody@127.0.0.1:1/none"))
    with pytest.raises(ValueError, match=problem):
        dbos.register_queue("q", limiter=limiter)
    with pytest.raises(ValueError, match="partition_" + problem):
        dbos.register_queue("q", partition_limiter=limiter)


async def test_an_out_of_range_priority_is_refused_before_anything_is_written(
    dbos_url: str,
) -> None:
    app = build_app(dbos_url, executor_id="me", tag="t", queues={"q": {}})
    async with app.dbos.launched():
        for priority in (0, -1, 2**31, True, 1.5, "1"):
            with (
                pytest.raises(DBOSException, match="priority"),
                SetEnqueueOptions(priority=priority),
            ):
                await app.queues["q"].enqueue(app.three_steps, 1)
    assert await query(dbos_url, "SELECT count(*) FROM {t}workflow_status") == [(0,)]


async def test_enqueue_refuses_bad_options_before_writing_a_row(dbos_url: str) -> None:
    app = build_app(dbos_url, executor_id="me", tag="t", queues={"q": {}})
    async with app.dbos.launched():
        with pytest.raises(DBOSException, match="reserved"):
            await app.dbos.enqueue_workflow("_dbos_mine", app.three_steps, 1)
        with (
            pytest.raises(DBOSException, match="return-existing"),
            SetEnqueueOptions(duplication_policy="return-existing"),
        ):
            await app.queues["q"].enqueue(app.three_steps, 1)
        with (
            pytest.raises(DBOSException, match="delay_seconds"),
            SetEnqueueOptions(delay_seconds=-1),
        ):
            await app.queues["q"].enqueue(app.three_steps, 1)
        with (
            pytest.raises(DBOSException, match="duplication_policy"),
            SetEnqueueOptions(duplication_policy="ignore"),  # type: ignore[arg-type]
        ):
            await app.queues["q"].enqueue(app.three_steps, 1)
    assert await query(dbos_url, "SELECT count(*) FROM {t}workflow_status") == [(0,)]


async def test_enqueueing_on_an_unknown_queue_writes_a_row_that_waits_for_the_queue(
    dbos_url: str,
) -> None:
    """As upstream, a queue name nobody registered is not an error: the workflow is
    recorded ENQUEUED and waits; once a ``queues`` row for the name appears (from any
    executor, even at runtime), the next supervisor sweep starts a worker and it runs."""
    app = build_app(dbos_url, executor_id="me", tag="t")
    async with app.dbos.launched():
        with SetWorkflowID("waiting"):
            handle = await app.dbos.enqueue_workflow("not-yet", app.three_steps, 4)
        await trio.sleep(1.2)
        row = await status_row(dbos_url, "waiting")
        assert (row["status"], row["queue_name"]) == ("ENQUEUED", "not-yet")
        await execute(
            dbos_url,
            "INSERT INTO {t}queues (name, application_name, polling_interval_sec) "
            "VALUES ('not-yet', %s, 0.05)",
            APP_NAME,
        )
        with trio.fail_after(HANG_GUARD):
            assert await handle.get_result() == expected_three_steps(4, "t")


async def test_a_stored_queue_row_no_registration_would_accept_does_not_stop_the_executor(
    dbos_url: str,
) -> None:
    """The ``queues`` table is shared with other SDKs and tools, which may store values
    ``register_queue`` refuses. Such a row is served as written (a zero limit admits
    nothing), and a zero polling interval does not spin; other queues keep running."""
    app = build_app(
        dbos_url, executor_id="me", tag="t", queues={"good": {"polling_interval_sec": FAST}}
    )
    async with app.dbos.launched():
        await execute(
            dbos_url,
            "INSERT INTO {t}queues (name, application_name, rate_limit_max, "
            "rate_limit_period_sec, polling_interval_sec) VALUES ('closed', %s, 0, 1.0, 0)",
            APP_NAME,
        )
        await trio.sleep(1.2)  # a sweep lists the odd row and starts its worker
        assert app.dbos._slot.executor is not None
        assert "closed" in app.dbos._slot.executor.queue_set.working
        with SetWorkflowID("never"):
            await app.dbos.enqueue_workflow("closed", app.three_steps, 1)
        assert await (await app.queues["good"].enqueue(app.three_steps, 2)).get_result()
        await trio.sleep(0.3)
        assert (await status_row(dbos_url, "never"))["status"] == "ENQUEUED"
        closed = await app.dbos.retrieve_queue("closed")
        assert closed is not None and closed.limiter == RateLimit(0, 1.0)


# --- admission arithmetic (pure) ------------------------------------------------------------


def test_contention_doubles_the_poll_interval_up_to_120_s_and_calm_decays_it_to_the_base() -> None:
    interval = 0.1
    seen = []
    for _ in range(15):
        interval = next_poll_interval(interval, 0.1, contended=True)
        seen.append(interval)
    assert seen[:3] == pytest.approx([0.2, 0.4, 0.8])
    assert seen[-1] == 120.0
    assert next_poll_interval(200.0, 200.0, contended=True) == 200.0  # a base above the cap
    assert next_poll_interval(1.0, 0.1, contended=False) == pytest.approx(0.9)
    assert next_poll_interval(0.105, 0.1, contended=False) == 0.1


def test_the_local_budget_is_the_tightest_of_worker_and_partition_worker_concurrency() -> None:
    config = QueueConfig(name="q", worker_concurrency=3, partition_worker_concurrency=2)
    counts = RunningCounts()
    assert local_budget(QueueConfig(name="q"), counts, None) is None
    assert local_budget(config, counts, "a") == 2
    counts.add("q", "a")
    counts.add("q", "b")
    assert local_budget(config, counts, None) == 1
    assert local_budget(config, counts, "a") == 1
    counts.add("q", "a")
    assert local_budget(config, counts, "a") == 0
    assert local_budget(config, counts, "c") == 0  # the worker as a whole is full
    for partition in ("a", "a", "b"):
        counts.remove("q", partition)
    assert (counts.running("q"), counts.running("q", "a")) == (0, 0)
    assert local_budget(config, counts, "a") == 2


@pytest.mark.postgres_only("the plan (EXPLAIN) of PostgreSQL's claim statement")
async def test_the_claim_looks_up_its_rows_by_primary_key_behind_a_large_backlog(
    dbos_url: str,
) -> None:
    """A claim must cost what it claims, not what waits: with thousands of rows queued,
    the plan of every claim shape reads no table sequentially."""
    await execute(
        dbos_url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, queue_name, "
        "application_name, application_version, created_at, queue_partition_key) "
        "SELECT 'w' || g, 'ENQUEUED', 'qa.noop', 'q', %s, 'v1', g, 'k' || (g %% 7) "
        "FROM generate_series(1, 5000) AS g",
        APP_NAME,
    )
    await execute(
        dbos_url,
        "INSERT INTO {t}workflow_input (workflow_uuid, inputs) "
        "SELECT workflow_uuid, 'x' FROM {t}workflow_status",
    )
    await execute(dbos_url, "ANALYZE {t}workflow_status")
    await execute(dbos_url, "ANALYZE {t}workflow_input")
    for consistent, partitioned in ((False, False), (True, False), (True, True)):
        statement = claim_statement("dbos", consistent=consistent, partitioned=partitioned)
        params = {
            "queue_name": "q",
            "partition_key": "k1",
            "owner_xid": "token",
            "executor_id": "me",
            "application_version": "v1",
            "application_name": APP_NAME,
            "runs_latest_version": True,
            "workflow_names": ["qa.noop"],
            "now": 1,
            "local_budget": 10,
            "global_concurrency": 20 if consistent else None,
            "rate_limit_max": 20 if consistent else None,
            "rate_limit_period_ms": 1000 if consistent else None,
            "partition_concurrency": 5 if partitioned else None,
            "partition_rate_limit_max": None,
            "partition_rate_limit_period_ms": None,
            "rate_limited": consistent,
            # Turn-taking's counts too, whenever a global limit applies.
            "turn_window_ms": 3000 if consistent else None,
            "turn_token": TURN_TOKEN,
            "turn_head": TURN_HEAD,
        }
        with psycopg.connect(dbos_url) as conn:
            plan = [line for (line,) in conn.execute("EXPLAIN " + statement, params)]
        assert not [line for line in plan if "Seq Scan" in line], (consistent, partitioned, plan)
