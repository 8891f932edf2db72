"""Port of the official SDK's ``tests/test_queue.py``: enqueueing, concurrency, rate
limits, deduplication, priority, partitions, delays and queue recovery."""

from __future__ import annotations

from typing import Any

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
