"""Partitioned queues: per-partition concurrency, worker concurrency and rate limits.

Any ``partition_*`` setting makes a queue partitioned: every enqueue names a partition
(``SetEnqueueOptions(queue_partition_key=...)``) and each limit applies to each partition
separately, while the queue-wide limits still bound the whole queue. Concurrency is
measured from the intervals the step bodies log to a side table.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest

from dbos_trio import DBOSException, SetEnqueueOptions, SetWorkflowID

from support.backends import execute, query
from support.queue_apps import App, build_app
from support.queue_fixtures import SideTable, max_overlap
from support.waiting import HANG_GUARD, wait_until

FAST = 0.05


async def run_holds(app: App, queue: str, per_partition: dict[str, int], seconds: float) -> None:
    """Enqueue ``hold(seconds)`` workflows ``<partition>-<i>`` and wait for all of them."""
    handles = []
    for partition, count in per_partition.items():
        for i in range(count):
            with (
                SetEnqueueOptions(queue_partition_key=partition),
                SetWorkflowID(f"{partition}-{i}"),
            ):
                handles.append(await app.queues[queue].enqueue(app.hold, seconds))
    for handle in handles:
        await handle.get_result()


async def intervals_by_partition(url: str) -> dict[str, list[tuple[Any, Any]]]:
    rows = await SideTable(url).rows("label = 'hold'")
    by_partition: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    for workflow_id, _, _, _, started, ended in rows:
        assert ended is not None
        by_partition[workflow_id.split("-")[0]].append((started, ended))
    return by_partition


async def test_partition_concurrency_runs_one_per_partition_while_partitions_run_side_by_side(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="p",
        queues={"parts": {"partition_concurrency": 1, "polling_interval_sec": FAST}},
    )
    async with app.dbos.launched():
        await run_holds(app, "parts", {"a": 3, "b": 3, "c": 2}, 0.15)
    by_partition = await intervals_by_partition(dbos_url)
    assert {p: len(v) for p, v in by_partition.items()} == {"a": 3, "b": 3, "c": 2}
    for partition, intervals in by_partition.items():
        assert max_overlap(intervals) == 1, partition
    everything = [i for intervals in by_partition.values() for i in intervals]
    assert max_overlap(everything) >= 2  # partitions are not serialized with each other


async def test_partition_concurrency_counts_other_executors_pending_rows_in_that_partition(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="p",
        queues={"parts": {"partition_concurrency": 1, "polling_interval_sec": FAST}},
    )
    await execute(
        dbos_url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, queue_name, executor_id, "
        "application_name, application_version, queue_partition_key) "
        "VALUES ('them-a', 'PENDING', 'qa.elsewhere', 'parts', 'them', 'wf-tests', 'v1', 'a')",
    )
    async with app.dbos.launched():
        with SetEnqueueOptions(queue_partition_key="a"), SetWorkflowID("a-0"):
            blocked = await app.queues["parts"].enqueue(app.hold, 0.01)
        with SetEnqueueOptions(queue_partition_key="b"), SetWorkflowID("b-0"):
            free = await app.queues["parts"].enqueue(app.hold, 0.01)
        await free.get_result()
        assert (await blocked.get_status()).status == "ENQUEUED"
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'SUCCESS' WHERE workflow_uuid = 'them-a'",
        )
        await blocked.get_result()


async def test_partition_worker_concurrency_caps_each_partition_in_this_process(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="p",
        queues={
            "parts": {
                "worker_concurrency": 3,
                "partition_worker_concurrency": 2,
                "polling_interval_sec": FAST,
            }
        },
    )
    async with app.dbos.launched():
        await run_holds(app, "parts", {"a": 4, "b": 4, "c": 4}, 0.15)
    by_partition = await intervals_by_partition(dbos_url)
    for partition, intervals in by_partition.items():
        assert max_overlap(intervals) <= 2, partition
    everything = [i for intervals in by_partition.values() for i in intervals]
    assert max_overlap(everything) == 3  # worker_concurrency bounds the whole queue


async def test_global_concurrency_bounds_a_partitioned_queue_as_a_whole(dbos_url: str) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="p",
        queues={
            "parts": {
                "global_concurrency": 2,
                "partition_concurrency": 2,
                "polling_interval_sec": FAST,
            }
        },
    )
    async with app.dbos.launched():
        await run_holds(app, "parts", {"a": 3, "b": 3, "c": 3}, 0.1)
    by_partition = await intervals_by_partition(dbos_url)
    everything = [i for intervals in by_partition.values() for i in intervals]
    assert len(everything) == 9
    assert max_overlap(everything) == 2


async def test_a_partition_limiter_spaces_the_starts_of_each_partition_independently(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="p",
        queues={"parts": {"partition_limiter": (1, 0.5), "polling_interval_sec": FAST}},
    )
    async with app.dbos.launched():
        await run_holds(app, "parts", {"a": 3, "b": 2}, 0.0)
    rows = await query(
        dbos_url,
        "SELECT queue_partition_key, started_at_epoch_ms, rate_limited "
        "FROM {t}workflow_status ORDER BY started_at_epoch_ms",
    )
    starts: dict[str, list[int]] = defaultdict(list)
    for partition, started, limited in rows:
        assert limited
        starts[partition].append(started)
    for partition, times in starts.items():
        for earlier, later in itertools.pairwise(times):
            assert later - earlier >= 500, (partition, times)
    # The two partitions' first starts did not wait for each other.
    assert abs(starts["a"][0] - starts["b"][0]) < 500


async def test_a_partitioned_queue_needs_a_key_and_an_unpartitioned_one_refuses_it(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="p",
        queues={"parts": {"partition_concurrency": 1}, "plain": {}},
    )
    async with app.dbos.launched():
        with pytest.raises(DBOSException, match="queue_partition_key"):
            await app.queues["parts"].enqueue(app.hold, 0.0)
        with (
            pytest.raises(DBOSException, match="not partitioned"),
            SetEnqueueOptions(queue_partition_key="a"),
        ):
            await app.queues["plain"].enqueue(app.hold, 0.0)
        with (
            pytest.raises(DBOSException, match=r"[Dd]eduplication"),
            SetEnqueueOptions(queue_partition_key="a", deduplication_id="d"),
        ):
            await app.queues["parts"].enqueue(app.hold, 0.0)
        # A queue retrieved from the database is checked the same way.
        retrieved = await app.dbos.retrieve_queue("parts")
        assert retrieved is not None
        with pytest.raises(DBOSException, match="queue_partition_key"):
            await retrieved.enqueue(app.hold, 0.0)
    assert await query(dbos_url, "SELECT count(*) FROM {t}workflow_status") == [(0,)]


async def test_every_partition_is_served_promptly_without_waiting_for_the_poll(
    dbos_url: str,
) -> None:
    app = build_app(
        dbos_url,
        executor_id="me",
        tag="p",
        queues={"parts": {"partition_concurrency": 1, "polling_interval_sec": 3600}},
    )
    async with app.dbos.launched():
        handles = []
        for i in range(20):
            with SetEnqueueOptions(queue_partition_key=f"k{i:02d}"):
                handles.append(await app.queues["parts"].enqueue(app.hold, 0.0))

        async def all_done() -> bool:
            rows = await query(
                dbos_url,
                "SELECT count(*) FROM {t}workflow_status WHERE status = 'SUCCESS'",
            )
            return bool(rows[0][0] == 20)

        await wait_until(all_done, timeout=HANG_GUARD, what="every partition's workflow to finish")
