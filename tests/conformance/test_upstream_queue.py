"""Port of the official SDK's ``tests/test_queue.py``: enqueueing, concurrency, rate
limits, deduplication, priority, partitions, delays and queue recovery."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    DBOSAwaitedWorkflowCancelledError,
    DBOSConflictingWorkflowError,
    DBOSException,
    DBOSQueueDeduplicatedError,
    EnqueueOptions,
    RateLimit,
    SetEnqueueOptions,
    SetWorkflowID,
    SetWorkflowTimeout,
)
from dbos_trio.testing import VIRTUAL_BACKGROUND_INTERVAL


async def past_one_sweep() -> None:
    """Let virtual time pass one sweep of the dequeue supervisor (which re-reads the
    queues table) and one poll of every queue, under virtual pacing."""
    await trio.sleep(VIRTUAL_BACKGROUND_INTERVAL + 1)


async def test_simple_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_simple_queue"""
    queue = dbos.register_queue("q")
    runs = {"step": 0}

    @dbos.step()
    async def a_step(value: str) -> str:
        runs["step"] += 1
        return value + "-s"

    @dbos.workflow()
    async def a_workflow(value: str) -> str:
        return await a_step(value) + "-w"

    async with dbos.launched():
        with SetWorkflowID("queued"):
            handle = await queue.enqueue(a_workflow, "abc")
        assert await handle.get_result() == "abc-s-w"
        status = await handle.get_status()
        assert status.queue_name == "q" and status.status == "SUCCESS"
        # Enqueueing the same id again returns the recorded outcome.
        with SetWorkflowID("queued"):
            again = await queue.enqueue(a_workflow, "abc")
        assert await again.get_result() == "abc-s-w"
        assert runs["step"] == 1


async def test_queue_childwf(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_queue_childwf"""
    queue = dbos.register_queue("child-q", worker_concurrency=1)

    @dbos.workflow()
    async def child(value: str) -> str:
        await dbos.sleep(0.1)
        return value + "-c"

    @dbos.workflow()
    async def parent(value: str) -> str:
        handles = [await queue.enqueue(child, f"{value}{i}") for i in range(3)]
        return ",".join([await h.get_result() for h in handles])

    async with dbos.launched():
        with SetWorkflowID("parent"):
            assert await parent("x") == "x0-c,x1-c,x2-c"
        status = await dbos.get_workflow_status("parent-1")
        assert status is not None and status.parent_workflow_id == "parent"


async def test_one_at_a_time(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_one_at_a_time"""
    queue = dbos.register_queue("serial", global_concurrency=1)
    running = {"now": 0, "most": 0}

    @dbos.workflow()
    async def one(value: int) -> int:
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        await dbos.sleep(1)
        running["now"] -= 1
        return value

    async with dbos.launched():
        handles = [await queue.enqueue(one, i) for i in range(5)]
        assert [await h.get_result() for h in handles] == list(range(5))
    assert running["most"] == 1


async def test_limiter(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_limiter (at most `limit` starts per period)"""
    queue = dbos.register_queue("limited", limiter=RateLimit(limit=5, period=2.0))

    @dbos.workflow()
    async def stamp() -> float:
        return trio.current_time()

    async with dbos.launched():
        handles = [await queue.enqueue(stamp) for _ in range(15)]
        times = sorted([await h.get_result() for h in handles])
    for index in range(len(times) - 5):
        assert times[index + 5] - times[index] >= 2.0 - 1e-6


async def test_multiple_queues(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_multiple_queues"""
    serial = dbos.register_queue("serial", global_concurrency=1)
    limited = dbos.register_queue("limited", limiter=RateLimit(limit=2, period=1.0))

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async with dbos.launched():
        first = [await serial.enqueue(echo, i) for i in range(3)]
        second = [await limited.enqueue(echo, i) for i in range(4)]
        assert [await h.get_result() for h in first + second] == [0, 1, 2, 0, 1, 2, 3]
        names = {w.queue_name for w in await dbos.list_workflows()}
        assert names == {"serial", "limited"}


async def test_one_at_a_time_with_worker_concurrency(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_one_at_a_time_with_worker_concurrency"""
    queue = dbos.register_queue("worker", worker_concurrency=1)
    running = {"now": 0, "most": 0}

    @dbos.workflow()
    async def one() -> None:
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        await dbos.sleep(1)
        running["now"] -= 1

    async with dbos.launched():
        handles = [await queue.enqueue(one) for _ in range(4)]
        for handle in handles:
            await handle.get_result()
            assert (await handle.get_status()).executor_id == dbos.executor_id
    assert running["most"] == 1


async def test_duplicate_workflow_id(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_duplicate_workflow_id"""

    @dbos.workflow()
    async def first(value: str) -> str:
        await dbos.sleep(1)
        return value

    @dbos.workflow()
    async def other() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("dup"):
            original = await dbos.start_workflow(first, "abc")
        with SetWorkflowID("dup"):
            same = await dbos.start_workflow(first, "abc")
        with SetWorkflowID("dup"), pytest.raises(DBOSConflictingWorkflowError) as raised:
            await dbos.start_workflow(other)
        assert "Workflow already exists with a different function name" in str(raised.value)
        assert await original.get_result() == await same.get_result() == "abc"


async def test_cancelling_queued_workflows(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_cancelling_queued_workflows"""
    queue = dbos.register_queue("serial", global_concurrency=1)
    release = trio.Event()

    @dbos.workflow()
    async def blocked(value: int) -> int:
        await release.wait()
        return value

    async with dbos.launched():
        handles = [await queue.enqueue(blocked, i) for i in range(4)]
        for handle in handles[2:]:
            await dbos.cancel_workflow(handle.workflow_id)
        release.set()
        assert [await h.get_result() for h in handles[:2]] == [0, 1]
        for handle in handles[2:]:
            with pytest.raises(DBOSAwaitedWorkflowCancelledError):
                await handle.get_result()
            assert (await handle.get_status()).status == "CANCELLED"


async def test_timeout_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_timeout_queue (a timeout on an enqueued workflow)"""
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def forever() -> None:
        while True:
            await dbos.sleep(0.5)

    async with dbos.launched():
        with SetWorkflowTimeout(1.0):
            handles = [await queue.enqueue(forever) for _ in range(3)]
        for handle in handles:
            with pytest.raises(DBOSAwaitedWorkflowCancelledError):
                await handle.get_result()
            assert (await handle.get_status()).status == "CANCELLED"


async def test_resuming_queued_workflows(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_resuming_queued_workflows"""
    queue = dbos.register_queue("serial", global_concurrency=1)
    release = trio.Event()

    @dbos.workflow()
    async def blocked(value: int) -> int:
        await release.wait()
        return value

    async with dbos.launched():
        blocker = await queue.enqueue(blocked, 0)
        waiting = [await queue.enqueue(blocked, i) for i in range(1, 4)]
        for handle in waiting:
            await dbos.cancel_workflow(handle.workflow_id)
        # Resuming bypasses the queue: the resumed ones run while the blocker holds it.
        resumed = [await dbos.resume_workflow(h.workflow_id) for h in waiting]
        release.set()
        assert [await h.get_result() for h in resumed] == [1, 2, 3]
        assert await blocker.get_result() == 0


async def test_enqueue_options_require_a_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_enqueue_options_require_a_queue"""

    @dbos.workflow()
    async def echo(value: str) -> str:
        return value

    async with dbos.launched():
        for option in (
            {"deduplication_id": "d"},
            {"priority": 5},
            {"queue_partition_key": "k"},
            {"delay_seconds": 30.0},
        ):
            with (
                pytest.raises(DBOSException) as raised,
                SetEnqueueOptions(**option),  # type: ignore[arg-type]
                SetWorkflowID("w"),
            ):
                await dbos.start_workflow(echo, "bob")
            assert "not being enqueued" in str(raised.value)
            assert next(iter(option)) in str(raised.value)
            assert await dbos.get_workflow_status("w") is None
        with SetEnqueueOptions(app_version="v1"), SetWorkflowID("pinned"):
            await (await dbos.start_workflow(echo, "bob")).get_result()
        pinned = await dbos.get_workflow_status("pinned")
        assert pinned is not None and pinned.app_version == "v1"


async def test_queue_deduplication(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_queue_deduplication"""
    queue = dbos.register_queue("dedup")
    release = trio.Event()

    @dbos.workflow()
    async def held(value: str) -> str:
        await release.wait()
        return value + "-p"

    async with dbos.launched():
        with SetEnqueueOptions(deduplication_id="d"), SetWorkflowID("w1"):
            first = await queue.enqueue(held, "abc")
        assert (await first.get_status()).deduplication_id == "d"
        with SetEnqueueOptions(deduplication_id="other"):
            other = await queue.enqueue(held, "ghi")
        plain = await queue.enqueue(held, "jkl")
        with SetWorkflowID("w1"):
            same = await queue.enqueue(held, "mno")
        with (
            pytest.raises(DBOSQueueDeduplicatedError) as raised,
            SetEnqueueOptions(deduplication_id="d"),
            SetWorkflowID("w2"),
        ):
            await queue.enqueue(held, "def")
        assert (
            "Workflow w2 was deduplicated due to an existing workflow in queue dedup "
            "with deduplication ID d." in str(raised.value)
        )
        release.set()
        assert await first.get_result() == "abc-p"
        assert await other.get_result() == "ghi-p"
        assert await plain.get_result() == "jkl-p"
        assert await same.get_result() == "abc-p"
        with SetEnqueueOptions(deduplication_id="d"), SetWorkflowID("w2"):
            again = await queue.enqueue(held, "def")
        assert await again.get_result() == "def-p"


async def test_priority_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_priority_queue"""
    queue = dbos.register_queue("prio", global_concurrency=1)
    order: list[int] = []
    release = trio.Event()

    @dbos.workflow()
    async def record(value: int) -> int:
        order.append(value)
        await release.wait()
        return value

    async with dbos.launched():
        with (
            pytest.raises(DBOSException, match="Invalid priority"),
            SetEnqueueOptions(priority=-100),
        ):
            await queue.enqueue(record, -100)
        handles = [await queue.enqueue(record, 0)]
        for priority in range(1, 6):
            with SetEnqueueOptions(priority=priority):
                handle = await queue.enqueue(record, priority)
            assert (await handle.get_status()).priority == priority
            handles.append(handle)
        handles.append(await queue.enqueue(record, 6))
        handles.append(await queue.enqueue(record, 7))
        release.set()
        for handle in handles:
            await handle.get_result()
    assert order == [0, 6, 7, 1, 2, 3, 4, 5]


async def test_enqueue_version(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_enqueue_version (another version waits)"""
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async with dbos.launched():
        with SetEnqueueOptions(app_version="other-version"), SetWorkflowID("elsewhere"):
            handle = await queue.enqueue(echo, 1)
        await trio.sleep(5)
        status = await handle.get_status()
        assert status.status == "ENQUEUED" and status.app_version == "other-version"
        with SetEnqueueOptions(app_version=dbos.app_version):
            mine = await queue.enqueue(echo, 2)
        assert await mine.get_result() == 2


async def test_queue_executor_id(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_queue_executor_id"""
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def echo() -> str | None:
        return dbos.workflow_id

    async with dbos.launched():
        handle = await queue.enqueue(echo)
        assert await handle.get_result() == handle.workflow_id
        assert (await handle.get_status()).executor_id == dbos.executor_id


async def test_complex_type(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_complex_type (arguments and results pickled)"""
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def echo(value: dict[str, object]) -> dict[str, object]:
        return {"got": value, "set": {1, 2}}

    async with dbos.launched():
        handle = await queue.enqueue(echo, {"a": (1, 2), "b": [b"x"]})
        assert await handle.get_result() == {"got": {"a": (1, 2), "b": [b"x"]}, "set": {1, 2}}


async def test_queue_partitions(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_queue_partitions"""
    queue = dbos.register_queue("parts", partition_concurrency=1)
    release = {"a": trio.Event(), "b": trio.Event()}

    @dbos.workflow()
    async def in_partition(key: str) -> str:
        await release[key].wait()
        return key

    async with dbos.launched():
        with SetEnqueueOptions(queue_partition_key="a"):
            a1 = await queue.enqueue(in_partition, "a")
            a2 = await queue.enqueue(in_partition, "a")
        with SetEnqueueOptions(queue_partition_key="b"):
            b1 = await queue.enqueue(in_partition, "b")
        release["b"].set()
        # Partition b runs although partition a's first workflow holds its slot.
        assert await b1.get_result() == "b"
        assert (await a2.get_status()).status == "ENQUEUED"
        release["a"].set()
        assert [await a1.get_result(), await a2.get_result()] == ["a", "a"]
        assert (await a1.get_status()).queue_partition_key == "a"
        with pytest.raises(DBOSException):
            await queue.enqueue(in_partition, "none")  # a partitioned queue needs a key


async def test_delay(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_delay"""
    queue = dbos.register_queue("delayed")

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with SetEnqueueOptions(delay_seconds=2.0):
            handle = await queue.enqueue(noop)
        status = await handle.get_status()
        assert status.status == "DELAYED" and status.delay_until_epoch_ms is not None
        await handle.get_result()
        final = await handle.get_status()
        assert final.status == "SUCCESS"
        with SetEnqueueOptions(delay_seconds=60.0):
            listed = await queue.enqueue(noop)
        delayed = await dbos.list_workflows(status="DELAYED")
        assert [w.workflow_id for w in delayed] == [listed.workflow_id]
        queued = await dbos.list_queued_workflows()
        assert listed.workflow_id in [w.workflow_id for w in queued]
        with SetEnqueueOptions(delay_seconds=1.0):
            waited = await queue.enqueue(noop)
        assert (await dbos.wait_first([waited])).workflow_id == waited.workflow_id


async def test_set_workflow_delay(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_set_workflow_delay"""
    queue = dbos.register_queue("delayed")

    @dbos.workflow()
    async def noop() -> str:
        return "ran"

    async with dbos.launched():
        with SetEnqueueOptions(delay_seconds=3600.0):
            handle = await queue.enqueue(noop)
        await dbos.set_workflow_delay(handle.workflow_id, delay_seconds=0)
        assert await handle.get_result() == "ran"
        with SetEnqueueOptions(delay_seconds=3600.0):
            later = await queue.enqueue(noop)
        with pytest.raises(DBOSException, match="must not be negative"):
            await dbos.set_workflow_delay(later.workflow_id, delay_seconds=-1)


async def test_enqueue_with_options(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_enqueue_with_options (DBOS.enqueue by name)"""
    dbos.register_queue("q")

    @dbos.workflow(name="echo")
    async def echo(value: str) -> str:
        return value + "!"

    async with dbos.launched():
        options = EnqueueOptions(workflow_name="echo", queue_name="q", workflow_id="by-name")
        handle = await dbos.enqueue(options, "hi")
        assert handle.workflow_id == "by-name"
        assert await handle.get_result() == "hi!"


async def test_enqueue_with_options_unknown_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_enqueue_with_options_unknown_workflow"""
    dbos.register_queue("q")
    async with dbos.launched():
        options = EnqueueOptions(
            workflow_name="not_registered_anywhere", queue_name="q", delay_seconds=3600
        )
        handle = await dbos.enqueue(options, 1)
        status = await handle.get_status()
        assert status.status == "DELAYED"
        assert status.app_version is None  # the target may live in another executor
        await dbos.cancel_workflow(handle.workflow_id)


async def test_queue_recovery(make_dbos: object, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_queue_recovery (a dequeued workflow survives)"""
    from dbos_trio import Config

    def app() -> tuple[DBOS, object, object]:
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="v1"))
        queue = instance.register_queue("q")

        @instance.workflow(name="slow")
        async def slow(value: int) -> int:
            await instance.sleep(10)
            return value

        return instance, queue, slow

    first, queue, slow = app()
    async with first.launched():
        handles = [await queue.enqueue(slow, i) for i in range(3)]  # type: ignore[attr-defined]
        await trio.sleep(1)
    second, _, _ = app()
    async with second.launched():
        results = [
            await (await second.retrieve_workflow(h.workflow_id)).get_result() for h in handles
        ]
    assert results == [0, 1, 2]


async def test_unsetting_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_unsetting_timeout"""
    queue = dbos.register_queue("test_queue")

    @dbos.workflow()
    async def child() -> str:
        for _ in range(5):
            await dbos.sleep(1)
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        return workflow_id

    @dbos.workflow()
    async def parent() -> None:
        with SetWorkflowID("child_two"), SetWorkflowTimeout(None):
            await queue.enqueue(child)
        with SetWorkflowID("child_one"):
            await queue.enqueue(child)

    async with dbos.launched():
        with SetWorkflowTimeout(2.0):
            await (await queue.enqueue(parent)).get_result()
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await (await dbos.retrieve_workflow("child_one")).get_result()
        assert await (await dbos.retrieve_workflow("child_two")).get_result() == "child_two"


async def test_wait_first_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_wait_first_queue"""
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def sleeper(seconds: float) -> float:
        await dbos.sleep(seconds)
        return seconds

    async with dbos.launched():
        handles = [await queue.enqueue(sleeper, s) for s in (30.0, 3.0, 10.0)]
        first = await dbos.wait_first(handles)
        assert first.workflow_id == handles[1].workflow_id
        assert await first.get_result() == 3.0


async def test_queue_crud(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_queue_crud (declared queues, listed and read back)"""
    dbos.register_queue(
        "crud",
        global_concurrency=10,
        limiter=RateLimit(limit=5, period=1.5),
        worker_concurrency=2,
        polling_interval_sec=2.5,
    )
    async with dbos.launched():
        retrieved = await dbos.retrieve_queue("crud")
        assert retrieved is not None
        listed = await dbos.list_queues()
        assert [q.name for q in listed] == ["crud"]
        for queue in (retrieved, listed[0]):
            config = queue.config
            assert config.global_concurrency == 10
            assert config.worker_concurrency == 2
            assert config.limiter == RateLimit(limit=5, period=1.5)
            assert config.polling_interval_sec == 2.5
        assert await dbos.retrieve_queue("missing") is None
        await dbos.delete_queue("crud")
        assert await dbos.retrieve_queue("crud") is None


async def test_queue_deduplication_recovery(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_queue_deduplication_recovery"""
    from dbos_trio import Config

    def app() -> tuple[DBOS, object, object]:
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="v1"))
        queue = instance.register_queue("dedup")

        @instance.workflow(name="held")
        async def held() -> str:
            await instance.sleep(10)
            return "done"

        return instance, queue, held

    first, queue, held = app()
    async with first.launched():
        with SetEnqueueOptions(deduplication_id="d"), SetWorkflowID("holder"):
            await queue.enqueue(held)  # type: ignore[attr-defined]
        await trio.sleep(1)
    second, queue, held = app()
    async with second.launched():
        # Still the holder after the restart: the id stays taken until it finishes.
        with (
            pytest.raises(DBOSQueueDeduplicatedError),
            SetEnqueueOptions(deduplication_id="d"),
        ):
            await queue.enqueue(held)  # type: ignore[attr-defined]
        assert await (await second.retrieve_workflow("holder")).get_result() == "done"
        with SetEnqueueOptions(deduplication_id="d"):
            again = await queue.enqueue(held)  # type: ignore[attr-defined]
        assert await again.get_result() == "done"


async def test_enqueue_with_options_child(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_enqueue_with_options_child"""
    dbos.register_queue("q")

    @dbos.workflow(name="child")
    async def child(value: int) -> int:
        return value + 1

    @dbos.workflow()
    async def parent() -> int:
        handle = await dbos.enqueue(EnqueueOptions(workflow_name="child", queue_name="q"), 1)
        result: int = await handle.get_result()
        return result

    async with dbos.launched():
        with SetWorkflowID("p"):
            assert await parent() == 2
        status = await dbos.get_workflow_status("p-1")
        assert status is not None and status.parent_workflow_id == "p"
        with SetWorkflowID("p"):
            assert await parent() == 2  # replayed: no second child
        assert len(await dbos.list_workflows(name="child")) == 1


async def test_listen_queue(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_listen_queue"""
    from dbos_trio import Config

    def app(listen: list[str]) -> tuple[DBOS, Any, Any]:
        instance = DBOS(
            Config(
                app_name="wf-tests", database_url=dbos_url, app_version="v1", listen_queues=listen
            )
        )
        one = instance.register_queue("queue_one")
        two = instance.register_queue("queue_two")

        @instance.workflow(name="listened")
        async def listened() -> str | None:
            return instance.workflow_id

        return instance, (one, two), listened

    first, (one, two), listened = app(["queue_one"])
    async with first.launched():
        handle_one = await one.enqueue(listened)
        handle_two = await two.enqueue(listened)
        assert await handle_one.get_result() == handle_one.workflow_id
        await trio.sleep(5)
        assert (await handle_two.get_status()).status == "ENQUEUED"
    second, _, _ = app(["queue_two"])
    async with second.launched():
        again = await second.retrieve_workflow(handle_two.workflow_id)
        assert await again.get_result() == handle_two.workflow_id


async def test_delay_cancel_resume_list(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_delay_cancel_resume_list"""
    queue = dbos.register_queue("delayed", polling_interval_sec=0.1)

    @dbos.workflow()
    async def done() -> str:
        return "done"

    async with dbos.launched():
        with SetEnqueueOptions(delay_seconds=60.0):
            cancelled = await queue.enqueue(done)
        assert (await cancelled.get_status()).status == "DELAYED"
        await dbos.cancel_workflow(cancelled.workflow_id)
        assert (await cancelled.get_status()).status == "CANCELLED"
        queued = await dbos.list_queued_workflows()
        assert cancelled.workflow_id not in [w.workflow_id for w in queued]
        with SetEnqueueOptions(delay_seconds=60.0):
            resumed = await queue.enqueue(done)
        await dbos.resume_workflow(resumed.workflow_id)
        assert await resumed.get_result() == "done"
        assert (await resumed.get_status()).status == "SUCCESS"


async def test_one_at_a_time_with_limiter(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_one_at_a_time_with_limiter"""
    queue = dbos.register_queue(
        "serial", global_concurrency=1, limiter=RateLimit(limit=10, period=1.0)
    )
    started, release = trio.Event(), trio.Event()
    ran = {"two": False}

    @dbos.workflow()
    async def one() -> None:
        started.set()
        await release.wait()

    @dbos.workflow()
    async def two() -> None:
        ran["two"] = True

    async with dbos.launched():
        first = await queue.enqueue(one)
        second = await queue.enqueue(two)
        await started.wait()
        await trio.sleep(2)
        assert not ran["two"]
        release.set()
        await first.get_result()
        await second.get_result()
        assert ran["two"]


async def test_enqueue_with_options_passthrough(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_enqueue_with_options_passthrough"""
    dbos.register_queue("q")

    @dbos.workflow(name="target")
    async def target(value: int) -> int:
        return value * 2

    async with dbos.launched():
        options = EnqueueOptions(
            workflow_name="target",
            queue_name="q",
            workflow_id="wf",
            app_version=dbos.app_version,
            deduplication_id="dedup-key",
            authenticated_user="alice",
            authenticated_roles=["admin"],
        )
        handle = await dbos.enqueue(options, 21)
        assert handle.workflow_id == "wf"
        assert await handle.get_result() == 42
        status = await handle.get_status()
        assert status.app_version == dbos.app_version
        assert status.authenticated_user == "alice"
        assert status.authenticated_roles == ["admin"]
        again = await dbos.enqueue(
            EnqueueOptions(workflow_name="target", queue_name="q", deduplication_id="dedup-key"),
            21,
        )
        assert await again.get_result() == 42  # the first one finished: the id is free


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        # A per-partition limit above its queue-wide counterpart could never bind.
        ({"global_concurrency": 1, "partition_concurrency": 2}, "greater than or equal"),
        ({"worker_concurrency": 1, "partition_worker_concurrency": 2}, "greater than or equal"),
        ({"partition_concurrency": 1, "partition_worker_concurrency": 2}, "greater than or equal"),
        ({"global_concurrency": 1, "partition_worker_concurrency": 2}, "greater than or equal"),
        # Malformed limits are refused as their queue-wide counterparts are.
        ({"partition_concurrency": 0}, "partition_concurrency"),
        ({"partition_worker_concurrency": 0}, "partition_worker_concurrency"),
        ({"partition_limiter": RateLimit(limit=0, period=1.0)}, "partition_limiter.limit"),
    ],
)
def test_partition_limit_validation(dbos: DBOS, limits: dict[str, Any], field: str) -> None:
    """upstream: tests/test_queue.py::test_partition_limit_validation

    Refused at registration, before anything is written. Upstream's cases that combine a
    deprecated option (``concurrency``, ``partition_queue``) with its replacement have no
    counterpart: dbos_trio has only the replacements."""
    with pytest.raises(ValueError, match=field):
        dbos.register_queue("invalid", **limits)
    with pytest.raises(TypeError):  # a limiter needs both its limit and its period
        RateLimit(limit=1)  # type: ignore[call-arg]


async def test_client_queue_crud(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_client_queue_crud

    A client's queue has no ``enqueue`` at all (upstream raises when it is called), so
    the workflow is enqueued by name through the executor, onto the client's queue."""
    from dbos_trio import Client

    @dbos.workflow(name="echo")
    async def echo(value: int) -> int:
        return value

    async with dbos.launched(), Client(dbos_url, app_name="wf-tests") as client:
        assert await client.retrieve_queue("client-q") is None
        assert await client.list_queues() == []
        queue = await client.register_queue(
            "client-q",
            global_concurrency=4,
            limiter=RateLimit(limit=5, period=1.5),
            worker_concurrency=2,
            polling_interval_sec=2.5,
        )
        assert queue.name == "client-q"
        retrieved = await client.retrieve_queue("client-q")
        assert retrieved is not None
        listed = await client.list_queues()
        assert [q.name for q in listed] == ["client-q"]
        for stored in (queue, retrieved, listed[0]):
            assert stored.config.global_concurrency == 4
            assert stored.config.worker_concurrency == 2
            assert stored.config.limiter == RateLimit(limit=5, period=1.5)
            assert stored.config.polling_interval_sec == 2.5
        # Setters write through the client: the executor reads the change.
        await retrieved.set_global_concurrency(8)
        fresh = await dbos.retrieve_queue("client-q")
        assert fresh is not None and fresh.config.global_concurrency == 8
        await retrieved.set_polling_interval_sec(0.1)
        handle = await dbos.enqueue(EnqueueOptions(workflow_name="echo", queue_name="client-q"), 42)
        assert await handle.get_result() == 42
        assert (await handle.get_status()).queue_name == "client-q"
        # A client runs no application version.
        with pytest.raises(DBOSException):
            await client.register_queue(
                "client-q", global_concurrency=1, on_conflict="update_if_latest_version"
            )
        # Its default is always_update: registering again overwrites the row.
        await client.register_queue("client-q", global_concurrency=99)
        overwritten = await dbos.retrieve_queue("client-q")
        assert overwritten is not None and overwritten.config.global_concurrency == 99
        await client.delete_queue("client-q")
        assert await client.retrieve_queue("client-q") is None
        assert await dbos.retrieve_queue("client-q") is None
        await client.delete_queue("client-q")  # deleting again changes nothing
        partitioned = await client.register_queue(
            "client-partitioned",
            partition_concurrency=2,
            partition_worker_concurrency=1,
            partition_limiter=RateLimit(limit=2, period=1.0),
        )
        for stored in (partitioned, await client.retrieve_queue("client-partitioned")):
            assert stored is not None
            assert stored.config.partition_concurrency == 2
            assert stored.config.partition_worker_concurrency == 1
            assert stored.config.partition_limiter == RateLimit(limit=2, period=1.0)
            assert stored.config.partitioned


async def test_queue_delete_and_recreate(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_queue.py::test_queue_delete_and_recreate

    Queues are declared before launch here, so the running executor's queue is recreated
    from a client; the executor serves the recreated row."""
    from dbos_trio import Client

    queue = dbos.register_queue("recreated", polling_interval_sec=0.1)

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async with dbos.launched(), Client(dbos_url, app_name="wf-tests") as client:
        assert await (await queue.enqueue(echo, 1)).get_result() == 1
        await dbos.delete_queue("recreated")
        assert await dbos.retrieve_queue("recreated") is None
        await trio.sleep(2)
        await client.register_queue("recreated", global_concurrency=5, polling_interval_sec=0.1)
        again = await dbos.retrieve_queue("recreated")
        assert again is not None and again.config.global_concurrency == 5
        assert await (await queue.enqueue(echo, 2)).get_result() == 2
        await dbos.delete_queue("recreated")


async def test_queue_workflow_in_recovered_workflow(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_queue_workflow_in_recovered_workflow

    Upstream crashes a subprocess in its fourth iteration; here the executor is killed at
    that iteration's checkpoint (dbos_trio.testing's crash injection) and relaunched."""
    from dbos_trio.testing import CrashPoint, run_until_crash

    queue = dbos.register_queue("testq", global_concurrency=1, limiter=RateLimit(1, 1.0))
    runs = {"parent": 0, "child": 0}

    @dbos.workflow(name="queued_task")
    async def queued_task() -> int:
        runs["child"] += 1
        await dbos.sleep(0.1)
        return 1

    @dbos.workflow(name="enqueue_5_tasks")
    async def enqueue_5_tasks() -> int:
        runs["parent"] += 1
        total = 0
        for _ in range(5):
            total += await (await queue.enqueue(queued_task)).get_result()
            await dbos.sleep(0.9)
        return total

    # Each iteration takes three step ids (the enqueue, its getResult, the sleep): crash
    # once the fourth iteration's child result is recorded.
    async with run_until_crash(dbos, CrashPoint.after_step("testqueuedwfcrash", 11)) as run:
        with SetWorkflowID("testqueuedwfcrash"):
            await dbos.start_workflow(enqueue_5_tasks)
        await run.wait()
    assert runs["child"] == 4
    async with dbos.launched():
        handle = await dbos.retrieve_workflow("testqueuedwfcrash")
        assert await handle.get_result() == 5
        assert (await handle.get_status()).status == "SUCCESS"
        children = await dbos.list_workflows(name="queued_task")
        assert len(children) == 5 and {c.status for c in children} == {"SUCCESS"}
        assert await dbos.list_queued_workflows() == []
    assert runs == {"parent": 2, "child": 5}


async def test_queue_concurrency_under_recovery(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_queue.py::test_queue_concurrency_under_recovery

    Upstream calls its private ``_recover_pending_workflows``; here ``recover_executor``.
    Recovering this live executor's own running rows moves nothing (they were stamped
    moments ago), where upstream re-enqueues them and then skips them as running
    locally: either way nothing runs twice."""
    from support.backends import execute

    queue = dbos.register_queue("test_queue", worker_concurrency=2)
    release = trio.Event()
    started = [trio.Event(), trio.Event()]
    counter = {"n": 0}

    @dbos.workflow()
    async def blocked(index: int) -> None:
        started[index].set()
        counter["n"] += 1
        await release.wait()

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        first = await queue.enqueue(blocked, 0)
        second = await queue.enqueue(blocked, 1)
        third = await queue.enqueue(noop)
        for event in started:
            await event.wait()
        assert counter["n"] == 2
        assert (await first.get_status()).status == "PENDING"
        assert (await second.get_status()).status == "PENDING"
        assert (await third.get_status()).status == "ENQUEUED"
        # Pretend the third one is PENDING on another, dead executor.
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'PENDING', executor_id = 'other', "
            "updated_at = 0 WHERE workflow_uuid = %s",
            third.workflow_id,
        )
        assert await dbos.recover_executor("other") == [third.workflow_id]
        assert (await third.get_status()).status == "ENQUEUED"
        assert (await first.get_status()).status == "PENDING"
        assert (await second.get_status()).status == "PENDING"
        assert await dbos.recover_executor(dbos.executor_id) == []
        await trio.sleep(2)
        assert counter["n"] == 2  # nothing ran again
        # Both slots are still held: the re-enqueued one waits its turn.
        assert (await third.get_status()).status == "ENQUEUED"
        release.set()
        assert await first.get_result() is None
        assert await second.get_result() is None
        assert await third.get_result() is None
        assert (await third.get_status()).executor_id == dbos.executor_id
        assert await dbos.list_queued_workflows() == []


async def test_resuming_queued_partitioned_workflows(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_resuming_queued_partitioned_workflows"""
    queue = dbos.register_queue("test_queue", partition_concurrency=1)
    started, release = trio.Event(), trio.Event()

    @dbos.workflow()
    async def stuck() -> None:
        started.set()
        await release.wait()

    @dbos.workflow()
    async def regular() -> None:
        return None

    async with dbos.launched():
        with SetEnqueueOptions(queue_partition_key="key"):
            blocked = await queue.enqueue(stuck)
            with SetWorkflowID("resumed"):
                first = await queue.enqueue(regular)
            second = await queue.enqueue(regular)
        await started.wait()
        assert (await blocked.get_status()).status == "PENDING"
        assert (await first.get_status()).status == "ENQUEUED"
        assert (await second.get_status()).status == "ENQUEUED"
        # Resuming runs it now, past its partition's limit.
        await dbos.resume_workflow("resumed")
        assert await first.get_result() is None
        assert (await second.get_status()).status == "ENQUEUED"
        release.set()
        assert await blocked.get_result() is None
        assert await second.get_result() is None
        assert await dbos.list_queued_workflows() == []


async def test_dlq_enqueued_workflows(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_dlq_enqueued_workflows

    Each recovery here: the row set back to PENDING (its owner long silent), then
    ``recover_executor`` re-enqueues it on its queue (upstream: the private
    ``_recover_pending_workflows``)."""
    from support.backends import execute, query

    queue = dbos.register_queue("test_queue", global_concurrency=1)
    max_recovery_attempts = 10
    started, release = trio.Event(), trio.Event()
    runs = {"n": 0}

    @dbos.workflow(max_recovery_attempts=max_recovery_attempts)
    async def blocked() -> None:
        runs["n"] += 1
        started.set()
        await release.wait()

    @dbos.workflow()
    async def regular() -> None:
        return None

    async def pending_and_recovered() -> list[str]:
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'PENDING', updated_at = 0 "
            "WHERE workflow_uuid = %s",
            blocked_handle.workflow_id,
        )
        return await dbos.recover_executor(dbos.executor_id)

    async with dbos.launched():
        blocked_handle = await queue.enqueue(blocked)
        regular_handle = await queue.enqueue(regular)
        # Enqueueing the same id again does not count as a recovery attempt.
        for _ in range(max_recovery_attempts):
            with SetWorkflowID(blocked_handle.workflow_id):
                await queue.enqueue(blocked)
        attempts = (await blocked_handle.get_status()).recovery_attempts
        assert attempts is not None and attempts <= 1
        await started.wait()
        assert (await blocked_handle.get_status()).status == "PENDING"
        assert (await regular_handle.get_status()).status == "ENQUEUED"
        release.set()
        assert await blocked_handle.get_result() is None
        assert await regular_handle.get_result() is None
        for attempt in range(max_recovery_attempts):
            started = trio.Event()
            assert await pending_and_recovered() == [blocked_handle.workflow_id]
            await started.wait()
            assert runs["n"] == attempt + 2
            assert (await blocked_handle.get_status()).recovery_attempts == attempt + 2
            assert await blocked_handle.get_result() is None
        # One recovery more than allowed: the workflow is dead-lettered, not run.
        assert await pending_and_recovered() == [blocked_handle.workflow_id]
        await trio.sleep(2)
        status = await blocked_handle.get_status()
        assert status.status == "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
        assert runs["n"] == max_recovery_attempts + 1
        [(stored_attempts,)] = await query(
            dbos_url,
            "SELECT recovery_attempts FROM {t}workflow_status WHERE workflow_uuid = %s",
            blocked_handle.workflow_id,
        )
        assert stored_attempts == max_recovery_attempts + 2
        assert await dbos.list_queued_workflows() == []


async def test_worker_concurrency_across_versions(dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_worker_concurrency_across_versions

    Upstream switches its global application version in place; here an executor of the
    other version is launched."""
    from dbos_trio import Client, Config

    def app(version: str) -> tuple[DBOS, Any, Any]:
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version=version))
        queue = instance.register_queue("across_versions", worker_concurrency=1)

        @instance.workflow(name="versioned")
        async def versioned() -> str | None:
            return instance.workflow_id

        return instance, queue, versioned

    first, queue, versioned = app("v1")
    async with first.launched(), Client(dbos_url, app_name="wf-tests") as client:
        other = await client.enqueue(
            EnqueueOptions(
                workflow_name="versioned", queue_name="across_versions", app_version="other"
            )
        )
        mine = await queue.enqueue(versioned)
        # The other version's row neither runs here nor holds this worker's only slot.
        assert await mine.get_result() == mine.workflow_id
        assert (await other.get_status()).status == "ENQUEUED"
    second, _, _ = app("other")
    async with second.launched():
        handle = await second.retrieve_workflow(other.workflow_id)
        assert await handle.get_result() == other.workflow_id


async def test_timeout_queue_recovery(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_timeout_queue_recovery"""
    from dbos_trio import DBOSAwaitedWorkflowCancelledError

    from support.backends import execute

    queue = dbos.register_queue("test_queue")
    started = trio.Event()

    @dbos.workflow()
    async def blocking() -> None:
        started.set()
        while True:
            await dbos.sleep(0.1)

    async with dbos.launched():
        enqueued_at_ms = int(await dbos.now() * 1000)
        with SetWorkflowTimeout(3.0):
            handle = await queue.enqueue(blocking)
        await started.wait()
        original = await handle.get_status()
        assert original.workflow_timeout_ms == 3000
        assert original.workflow_deadline_epoch_ms is not None
        assert original.workflow_deadline_epoch_ms > enqueued_at_ms
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        # Back to PENDING (its owner long silent), then recovered.
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET status = 'PENDING', updated_at = 0 "
            "WHERE workflow_uuid = %s",
            handle.workflow_id,
        )
        assert await dbos.recover_executor(dbos.executor_id) == [handle.workflow_id]
        recovered = await handle.get_status()
        assert recovered.workflow_timeout_ms == 3000
        assert recovered.workflow_deadline_epoch_ms == original.workflow_deadline_epoch_ms
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        final = await handle.get_status()
        assert final.workflow_deadline_epoch_ms == original.workflow_deadline_epoch_ms


async def test_dequeue_no_version_requires_latest(
    make_dbos: Any, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_queue.py::test_dequeue_no_version_requires_latest

    A newer version is registered by launching an executor of it (upstream writes the
    version row through its private ``_sys_db``)."""
    from dbos_trio import Client

    newer = make_dbos(app_version="newer")
    dbos = make_dbos()  # v1
    queue = dbos.register_queue("latest_only")

    @dbos.workflow(name="versionless_target")
    async def target(value: int) -> int:
        return value

    async with dbos.launched():
        pass  # v1 registered first
    async with newer.launched():
        pass  # then the newer one: the latest
    async with dbos.launched(), Client(dbos_url, app_name="wf-tests") as client:
        versionless = await client.enqueue(
            EnqueueOptions(workflow_name="versionless_target", queue_name="latest_only"), 5
        )
        versioned = await queue.enqueue(target, 7)
        assert await versioned.get_result() == 7  # its own version: always dequeued
        await trio.sleep(5)
        # Version-less work is for the latest version only, which this executor is not.
        assert (await versionless.get_status()).status == "ENQUEUED"
        await dbos.set_latest_application_version("v1")
        assert await versionless.get_result() == 5


async def test_partitioned_queue_does_not_starve_partitions(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_queue.py::test_partitioned_queue_does_not_starve_partitions

    Upstream enqueues before it registers the queue, so the first sweep sees every
    partition; a dbos_trio queue is declared before launch, so it is paused while the
    backlog is enqueued instead. Measured in completions, not time."""
    busy_backlog = 60
    busy = ["aaa-busy-1", "aaa-busy-2"]  # sorted first: a fixed order would prefer them
    small = [f"zzz-small-{i}" for i in range(4)]
    queue = dbos.register_queue(
        "starvation", partition_concurrency=1, worker_concurrency=2, polling_interval_sec=0.1
    )
    completed: list[str] = []

    @dbos.workflow()
    async def quick(partition: str) -> str:
        completed.append(partition)
        return partition

    async with dbos.launched():
        await dbos.pause_queue("starvation")
        await past_one_sweep()  # a pause takes effect at the next sweep of the queues table
        handles = []
        for partition in busy:
            with SetEnqueueOptions(queue_partition_key=partition):
                handles += [await queue.enqueue(quick, partition) for _ in range(busy_backlog)]
        for partition in small:
            with SetEnqueueOptions(queue_partition_key=partition):
                handles.append(await queue.enqueue(quick, partition))
        await dbos.unpause_queue("starvation")
        for handle in handles:
            await handle.get_result()
    # When the last small partition was first served, most of the busy backlog remained.
    last_small = max(completed.index(partition) for partition in small)
    busy_done = sum(1 for partition in completed[:last_small] if partition in busy)
    assert busy_done < busy_backlog * len(busy) // 2


@pytest.mark.parametrize(
    ("limits", "per_partition", "queue_wide"),
    [
        ({"partition_concurrency": 1, "worker_concurrency": 3}, 1, 3),
        ({"partition_concurrency": 2, "global_concurrency": 3}, 2, 3),
        ({"partition_worker_concurrency": 2, "worker_concurrency": 3}, 2, 3),
    ],
    ids=["partition-and-worker", "partition-and-global", "partition-and-worker-axis"],
)
async def test_partition_limits_bound_both_scopes(
    dbos: DBOS,
    autojump_clock: MockClock,
    limits: dict[str, Any],
    per_partition: int,
    queue_wide: int,
) -> None:
    """upstream: tests/test_queue.py::test_partition_limits_bound_both_scopes"""
    partitions = [f"partition-{i}" for i in range(4)]
    polling_interval = 0.5
    queue = dbos.register_queue("partition_limits", polling_interval_sec=polling_interval, **limits)
    release, saturated = trio.Event(), trio.Event()
    running = dict.fromkeys(partitions, 0)
    most = dict.fromkeys(partitions, 0)
    total = {"now": 0, "most": 0}

    @dbos.workflow()
    async def blocking(partition: str) -> str:
        running[partition] += 1
        total["now"] += 1
        most[partition] = max(most[partition], running[partition])
        total["most"] = max(total["most"], total["now"])
        if total["now"] == queue_wide:
            saturated.set()
        await release.wait()
        running[partition] -= 1
        total["now"] -= 1
        workflow_id = dbos.workflow_id
        assert workflow_id is not None
        return workflow_id

    async with dbos.launched():
        handles = []
        for partition in partitions:
            with SetEnqueueOptions(queue_partition_key=partition):
                handles += [await queue.enqueue(blocking, partition) for _ in range(3)]
        await saturated.wait()
        # Several polling intervals: neither limit is ever exceeded, and a partition with
        # no room stays blocked rather than borrowing another's.
        await trio.sleep(4 * polling_interval)
        assert total["most"] == queue_wide
        assert all(most[p] <= per_partition for p in partitions)
        release.set()
        for handle in handles:
            assert await handle.get_result() == handle.workflow_id
        assert total["most"] == queue_wide
        assert all(most[p] <= per_partition for p in partitions)
        assert await dbos.list_queued_workflows() == []


@pytest.mark.parametrize(
    "limits",
    [
        {"global_concurrency": 1, "partition_concurrency": 1},
        {"limiter": RateLimit(limit=1, period=3600), "partition_concurrency": 1},
    ],
    ids=["global-concurrency", "limiter"],
)
async def test_queue_wide_limit_holds_across_executors(
    make_dbos: Any, autojump_clock: MockClock, limits: dict[str, Any]
) -> None:
    """upstream: tests/test_queue.py::test_queue_wide_limit_holds_across_executors

    Upstream races its private claim (``_sys_db.start_queued_workflows``) from two
    threads on PostgreSQL. Here two executors on one database serve one partitioned
    queue, each of its two partitions with work: the queue-wide limit still admits one
    workflow in all (this runs on SQLite; the PostgreSQL claim is tested in tests/sysdb)."""
    executors = [make_dbos(executor_id=f"executor-{i}") for i in range(2)]
    queues = [
        executor.register_queue("cross_executor", polling_interval_sec=0.1, **limits)
        for executor in executors
    ]
    release = trio.Event()
    running = {"now": 0, "most": 0}
    workflows = []
    for executor in executors:

        @executor.workflow(name="held")
        async def held() -> str:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
            await release.wait()
            running["now"] -= 1
            return "done"

        workflows.append(held)

    async with executors[0].launched(), executors[1].launched():
        handles = []
        for partition in ("a", "b"):
            with SetEnqueueOptions(queue_partition_key=partition):
                handles += [await queues[0].enqueue(workflows[0]) for _ in range(2)]
        for _ in range(3):  # both executors sweep the queue, again and again
            await past_one_sweep()
        assert running["most"] == 1
        pending = await executors[0].list_workflows(status="PENDING")
        assert len(pending) == 1
        release.set()
        if "limiter" in limits:
            return  # one start an hour: the rest wait out the window
        for handle in handles:
            assert await handle.get_result() == "done"
        assert running["most"] == 1


async def test_partition_limiter_with_queue_wide_limiter(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_queue.py::test_partition_limiter_with_queue_wide_limiter"""
    queue_limit, partition_limit = 3, 1
    partitions = [f"p{i}" for i in range(4)]
    polling_interval = 0.25
    queue = dbos.register_queue(
        "partition_and_queue_limiter",
        limiter=RateLimit(limit=queue_limit, period=60),
        partition_limiter=RateLimit(limit=partition_limit, period=60),
        polling_interval_sec=polling_interval,
    )
    done = trio.Event()
    finished: list[str] = []

    @dbos.workflow()
    async def noop(tag: str) -> str:
        finished.append(tag)
        if len(finished) == queue_limit:
            done.set()
        return tag

    async with dbos.launched():
        handles = []
        for partition in partitions:
            with SetEnqueueOptions(queue_partition_key=partition):
                handles += [await queue.enqueue(noop, partition) for _ in range(2)]
        await done.wait()
        # Several polling intervals with no further admission: both windows stay spent.
        await trio.sleep(4 * polling_interval)
        statuses = [await h.get_status() for h in handles]
        assert [s.status for s in statuses].count("SUCCESS") == queue_limit
        started = [s.queue_partition_key for s in statuses if s.status != "ENQUEUED"]
        assert len(started) == queue_limit and len(set(started)) == queue_limit


async def test_partitioned_queue_fallback_routing(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_partitioned_queue_fallback_routing

    Upstream spies on which of its private dequeue paths serves each queue; what a user
    sees is ported: a partitioned queue with a rate limiter drains, and a paused one
    (upstream's zero worker limit, which dbos_trio refuses: it pauses a queue with
    ``pause_queue``) leaves its workflow enqueued."""
    limited = dbos.register_queue(
        "limiter_fallback",
        partition_concurrency=1,
        partition_limiter=RateLimit(limit=10, period=60),
        polling_interval_sec=0.25,
    )
    paused = dbos.register_queue(
        "paused_fallback", partition_concurrency=1, polling_interval_sec=0.25
    )

    @dbos.workflow()
    async def routed(tag: str) -> str:
        return tag

    async with dbos.launched():
        await dbos.pause_queue("paused_fallback")
        await past_one_sweep()  # a pause takes effect at the next sweep of the queues table
        handles = []
        for partition in ("p0", "p1"):
            with SetEnqueueOptions(queue_partition_key=partition):
                handles.append(await limited.enqueue(routed, f"limited-{partition}"))
        with SetEnqueueOptions(queue_partition_key="p0"):
            held = await paused.enqueue(routed, "paused")
        assert [await h.get_result() for h in handles] == ["limited-p0", "limited-p1"]
        await trio.sleep(2)
        assert (await held.get_status()).status == "ENQUEUED"
        await dbos.unpause_queue("paused_fallback")
        assert await held.get_result() == "paused"


async def test_partitioned_queue_global_exclusivity(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_partitioned_queue_global_exclusivity

    (Upstream also checks which of its private dequeue paths ran; not ported.)"""
    queue = dbos.register_queue("exclusive", partition_concurrency=1, polling_interval_sec=0.25)
    order: list[str] = []
    waiting, release = trio.Event(), trio.Event()

    @dbos.workflow()
    async def head() -> str:
        order.append("head")
        waiting.set()
        await release.wait()
        return "head"

    @dbos.workflow()
    async def tagged(tag: str) -> str:
        order.append(tag)
        return tag

    async with dbos.launched():
        with SetEnqueueOptions(queue_partition_key="a"):
            head_handle = await queue.enqueue(head)
            follower_1 = await queue.enqueue(tagged, "a1")
            follower_2 = await queue.enqueue(tagged, "a2")
        with SetEnqueueOptions(queue_partition_key="b"):
            other = await queue.enqueue(tagged, "b1")
        await waiting.wait()
        # Partition b drains while a's head holds a's only slot.
        assert await other.get_result() == "b1"
        assert (await follower_1.get_status()).status == "ENQUEUED"
        assert (await follower_2.get_status()).status == "ENQUEUED"
        release.set()
        assert await head_handle.get_result() == "head"
        assert await follower_1.get_result() == "a1"
        assert await follower_2.get_result() == "a2"
        assert [tag for tag in order if tag != "b1"] == ["head", "a1", "a2"]
        assert await dbos.list_queued_workflows() == []


async def test_polling_interval(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_polling_interval (virtual seconds, not real)"""
    queue = dbos.register_queue("queue", polling_interval_sec=0.1)

    @dbos.workflow()
    async def workflow() -> str | None:
        return dbos.workflow_id

    async with dbos.launched():
        assert await (await queue.enqueue(workflow)).get_result()
        for _ in range(10):
            began = trio.current_time()
            assert await (await queue.enqueue(workflow)).get_result()
            assert trio.current_time() - began < 1.0


async def test_enqueue_with_options_ambient_context(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_queue.py::test_enqueue_with_options_ambient_context

    Options left unset fall back to the ``Set*`` blocks in force, as for every enqueue
    (an explicit option wins; attributes merge). dbos_trio has no ambient authenticated
    user (upstream's ``DBOSContextSetAuth``), so that part is not ported."""
    from dbos_trio import SetWorkflowAttributes

    dbos.register_queue("with_options_ctx_queue")

    @dbos.workflow(name="with_options_ctx_target")
    async def target(value: int) -> int:
        return value

    options = EnqueueOptions(
        workflow_name="with_options_ctx_target", queue_name="with_options_ctx_queue"
    )
    async with dbos.launched():
        with SetWorkflowID("ambient-id"), SetEnqueueOptions(app_version="ambient-version"):
            handle = await dbos.enqueue(options, 1)
        assert handle.workflow_id == "ambient-id"
        status = await handle.get_status()
        assert status.app_version == "ambient-version"
        assert status.status == "ENQUEUED"  # no executor runs that version
        await dbos.cancel_workflow("ambient-id")

        with SetEnqueueOptions(deduplication_id="ambient-dedup", priority=5, delay_seconds=3600):
            ambient = await dbos.enqueue(options, 3)
        status = await ambient.get_status()
        assert status.status == "DELAYED"
        assert status.deduplication_id == "ambient-dedup"
        assert status.priority == 5
        await dbos.cancel_workflow(ambient.workflow_id)

        # An ambient partition key reaches the row too, refused beside a deduplication id.
        with pytest.raises(DBOSException), SetEnqueueOptions(queue_partition_key="tenant-1"):
            await dbos.enqueue(attrs.evolve(options, deduplication_id="never-written"), 4)

        with SetWorkflowAttributes({"ambient": "a"}), SetEnqueueOptions(delay_seconds=3600):
            merged = await dbos.enqueue(attrs.evolve(options, attributes={"explicit": "b"}), 6)
        assert (await merged.get_status()).attributes == {"ambient": "a", "explicit": "b"}
        await dbos.cancel_workflow(merged.workflow_id)

        with SetEnqueueOptions(app_version="ambient-version"):
            explicit = await dbos.enqueue(attrs.evolve(options, app_version=dbos.app_version), 2)
        assert await explicit.get_result() == 2
