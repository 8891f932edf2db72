"""Port of the official SDK's ``tests/test_debouncer.py``: coalescing calls by key, the
period and overall timeout, queues, pinned ids and a client's debouncer."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio
from trio.testing import MockClock

from dbos_trio import (
    DBOS,
    Client,
    DBOSException,
    DBOSQueueDeduplicatedError,
    EnqueueOptions,
    SetEnqueueOptions,
    SetWorkflowID,
    SetWorkflowTimeout,
)


async def test_debouncer(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debouncer"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    async def scenario() -> None:
        first = await dbos.debouncer(echo).debounce("key", 2, 0)
        second = await dbos.debouncer(echo).debounce("key", 2, 1)
        assert first.workflow_id == second.workflow_id
        assert await first.get_result() == await second.get_result() == 1
        third = await dbos.debouncer(echo).debounce("key", 2, 2)
        fourth = await dbos.debouncer(echo).debounce("key", 2, 3)
        assert third.workflow_id != first.workflow_id
        assert third.workflow_id == fourth.workflow_id
        assert await third.get_result() == 3
        pinned_id = await dbos.uuid4()
        with SetWorkflowID(pinned_id):
            pinned = await dbos.debouncer(echo).debounce("key", 2, 0)
        assert pinned.workflow_id == pinned_id
        assert await pinned.get_result() == 0

    in_workflow = dbos.workflow(name="scenario")(scenario)
    async with dbos.launched():
        await scenario()
        with SetWorkflowID("wf"):
            await in_workflow()
        with SetWorkflowID("wf"):
            await in_workflow()  # replayed from its checkpoints


async def test_debouncer_timeout(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debouncer_timeout"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    capped = dbos.debouncer(echo, debounce_timeout_sec=2)
    plain = dbos.debouncer(echo)
    long_period = 10_000_000
    async with dbos.launched():
        first = await capped.debounce("key", long_period, 0)
        second = await capped.debounce("key", long_period, 1)
        assert first.workflow_id == second.workflow_id
        assert await first.get_result() == 1  # started by the timeout, not the period
        third = await capped.debounce("key", long_period, 2)
        fourth = await capped.debounce("key", long_period, 3)
        assert third.workflow_id != first.workflow_id
        assert third.workflow_id == fourth.workflow_id
        assert await fourth.get_result() == 3
        fifth = await plain.debounce("key", long_period, 0)
        sixth = await plain.debounce("key", 1, 1)  # a shorter period moves the start earlier
        assert fifth.workflow_id == sixth.workflow_id != fourth.workflow_id
        assert await sixth.get_result() == 1


async def test_multiple_debouncers(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_multiple_debouncers"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    one, two = dbos.debouncer(echo), dbos.debouncer(echo)
    async with dbos.launched():
        first = await one.debounce("key_one", 2, 0)
        second = await one.debounce("key_one", 2, 1)
        third = await two.debounce("key_two", 2, 2)
        fourth = await two.debounce("key_two", 2, 3)
        assert first.workflow_id == second.workflow_id != third.workflow_id
        assert third.workflow_id == fourth.workflow_id
        assert [await first.get_result(), await third.get_result()] == [1, 3]


async def test_debouncer_queue(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debouncer_queue"""
    queue = dbos.register_queue("test-queue")

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo, queue=queue)
    async with dbos.launched():
        first = await debouncer.debounce("key", 2, 0)
        second = await debouncer.debounce("key", 2, 1)
        assert first.workflow_id == second.workflow_id
        assert await second.get_result() == 1
        assert (await second.get_status()).queue_name == "test-queue"
        with SetWorkflowTimeout(5.0):
            third = await debouncer.debounce("key", 2, 2)
            fourth = await debouncer.debounce("key", 2, 3)
        assert third.workflow_id == fourth.workflow_id != first.workflow_id
        assert await fourth.get_result() == 3
        status = await fourth.get_status()
        assert status.queue_name == "test-queue"
        assert status.workflow_timeout_ms == 5000
        assert status.workflow_deadline_epoch_ms
        with SetWorkflowID("pinned"):
            pinned = await debouncer.debounce("key", 2, 0)
        assert pinned.workflow_id == "pinned"
        assert await pinned.get_result() == 0
        with SetEnqueueOptions(app_version=dbos.app_version):
            versioned = await debouncer.debounce("key", 2, 0)
        assert await versioned.get_result() == 0


async def test_debouncer_client(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debouncer_client"""
    dbos.register_queue("test-queue")

    @dbos.workflow(name="echo")
    async def echo(value: int) -> int:
        return value

    async with dbos.launched(), Client(dbos_url) as client:
        options = EnqueueOptions(workflow_name="echo", queue_name="test-queue")
        debouncer = client.debouncer(options)
        first = await debouncer.debounce("key", 2, 0)
        second = await debouncer.debounce("key", 2, 1)
        assert first.workflow_id == second.workflow_id
        assert await first.get_result() == 1
        third = await debouncer.debounce("key", 2, 2)
        fourth = await debouncer.debounce("key", 2, 3)
        assert third.workflow_id == fourth.workflow_id != first.workflow_id
        assert await fourth.get_result() == 3
        pinned = client.debouncer(attrs.evolve(options, workflow_id="pinned"))
        handle = await pinned.debounce("key", 2, 0)
        assert handle.workflow_id == "pinned"
        assert await handle.get_result() == 0


async def test_debounce_fixed_workflow_id_reuse(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_fixed_workflow_id_reuse"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo)
    async with dbos.launched():
        with SetWorkflowID("pinned"):
            first = await debouncer.debounce("key", 2, 1)
        with SetWorkflowID("pinned"):
            second = await debouncer.debounce("key", 2, 2)
        assert first.workflow_id == second.workflow_id == "pinned"
        assert await first.get_result() == 2
        with SetWorkflowID("pinned2"):
            await debouncer.debounce("key2", 1_000_000, 3)
        with SetWorkflowID("pinned2"):
            fourth = await debouncer.debounce("key2", 1, 4)
        assert await fourth.get_result() == 4


async def test_debounce_rejects_caller_dedup_and_delay(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_rejects_caller_dedup_and_delay"""

    @dbos.workflow(name="echo")
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo)
    async with dbos.launched():
        for option, word in (
            ({"deduplication_id": "caller-dedup"}, "deduplication_id"),
            ({"delay_seconds": 100.0}, "delay"),
            ({"priority": 1}, "priority"),
            ({"queue_partition_key": "p"}, "partition key"),
        ):
            with pytest.raises(DBOSException, match=word), SetEnqueueOptions(**option):  # type: ignore[arg-type]
                await debouncer.debounce("k", 1.0, 1)
        assert await dbos.list_workflows(name="echo") == []
        async with Client(dbos_url) as client:
            with pytest.raises(DBOSException, match="deduplication_id"):
                client.debouncer(
                    EnqueueOptions(
                        workflow_name="echo", queue_name="q", deduplication_id="caller-dedup"
                    )
                )


async def test_debounce_cancel_then_redebounce(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_cancel_then_redebounce"""

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo)
    async with dbos.launched():
        first = await debouncer.debounce("key", 1_000_000, 1)
        assert (await first.get_status()).status == "DELAYED"
        await dbos.cancel_workflow(first.workflow_id)
        second = await debouncer.debounce("key", 1, 2)
        assert second.workflow_id != first.workflow_id
        assert await second.get_result() == 2


async def test_debounce_deadline_caps_initial_delay(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_deadline_caps_initial_delay"""
    from support.backends import query

    @dbos.workflow()
    async def echo(value: int) -> int:
        return value

    debouncer = dbos.debouncer(echo, debounce_timeout_sec=1000)
    async with dbos.launched():
        handle = await debouncer.debounce("key", 1_000_000, 1)
        url = dbos.config.database_url
        assert url is not None
        [(status, debounced, deadline, delay_until)] = await query(
            url,
            "SELECT status, is_debounced, debounce_deadline_epoch_ms, delay_until_epoch_ms "
            "FROM {t}workflow_status WHERE workflow_uuid = %s",
            handle.workflow_id,
        )
        assert status == "DELAYED" and debounced
        assert deadline is not None and delay_until is not None
        assert delay_until <= deadline
        await dbos.cancel_workflow(handle.workflow_id)


async def test_debounce_user_dedup_conflict_raises(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_user_dedup_conflict_raises"""
    queue = dbos.register_queue("q")

    @dbos.workflow(name="slow")
    async def slow(value: int) -> int:
        await dbos.sleep(1_000_000)
        return value

    debouncer = dbos.debouncer(slow, queue=queue)
    async with dbos.launched():
        with SetEnqueueOptions(deduplication_id="slow-key"):
            blocker = await queue.enqueue(slow, 1)
        with pytest.raises(DBOSQueueDeduplicatedError):
            await debouncer.debounce("key", 1, 2)
        await dbos.cancel_workflow(blocker.workflow_id)


async def test_debounce_key_collision_between_workflows(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_key_collision_between_workflows"""
    dbos.register_queue("collide")
    async with dbos.launched(), Client(dbos_url) as client:
        one = client.debouncer(EnqueueOptions(workflow_name="colw", queue_name="collide"))
        two = client.debouncer(EnqueueOptions(workflow_name="colw-b", queue_name="collide"))
        first = await one.debounce("b-k", 1_000_000, 1)
        status = await first.get_status()
        assert (status.status, status.deduplication_id) == ("DELAYED", "colw-b-k")
        with pytest.raises(DBOSQueueDeduplicatedError):
            await two.debounce("k", 1, 2)  # same deduplication id, another workflow
        status = await first.get_status()
        assert (status.status, status.name) == ("DELAYED", "colw")
        again = await one.debounce("b-k", 1_000_000, 3)
        assert again.workflow_id == first.workflow_id
        await client.cancel_workflow(first.workflow_id)


async def test_debounce_inworkflow_does_not_inherit_parent_deadline(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_inworkflow_does_not_inherit_parent_deadline"""  # noqa: E501

    @dbos.workflow()
    async def child(value: int) -> int:
        return value

    debouncer = dbos.debouncer(child)

    @dbos.workflow()
    async def parent() -> str:
        handle = await debouncer.debounce("deadline-key", 3.0, 5)
        return handle.workflow_id

    async with dbos.launched():
        with SetWorkflowTimeout(1.0):
            started = await dbos.start_workflow(parent)
        child_id = await started.get_result()
        handle = await dbos.retrieve_workflow(child_id)
        status = await handle.get_status()
        assert status.status == "DELAYED" and status.workflow_deadline_epoch_ms is None
        assert await handle.get_result() == 5


async def test_debounce_bounce_path_does_not_leak_pinned_id(
    dbos: DBOS, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_bounce_path_does_not_leak_pinned_id"""

    @dbos.workflow()
    async def child(value: int) -> int:
        return value

    @dbos.workflow()
    async def other(value: int) -> int:
        return value

    debouncer = dbos.debouncer(child)

    @dbos.workflow()
    async def parent(pinned: str) -> tuple[str, str]:
        first = await debouncer.debounce("leak-key", 1_000_000, 1)
        with SetWorkflowID(pinned):
            bounced = await debouncer.debounce("leak-key", 1_000_000, 2)
        assert bounced.workflow_id == first.workflow_id
        following = await dbos.start_workflow(other, 3)
        return first.workflow_id, following.workflow_id

    async with dbos.launched():
        delayed, following = await (await dbos.start_workflow(parent, "pinned")).get_result()
        assert following != "pinned"
        assert await (await dbos.retrieve_workflow(following)).get_result() == 3
        await dbos.cancel_workflow(delayed)


async def debounce_row(url: str, workflow_id: str) -> tuple[Any, ...]:
    """(status, is_debounced, deduplication_id, delay_until_epoch_ms) of the row."""
    from support.backends import query

    [row] = await query(
        url,
        "SELECT status, is_debounced, deduplication_id, delay_until_epoch_ms "
        "FROM {t}workflow_status WHERE workflow_uuid = %s",
        workflow_id,
    )
    return row


def losing_the_race_once(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Make the next fresh debounce enqueue lose the deduplication race once: its insert
    raises as if a concurrent debounce had taken the key between the bounce and it."""
    from dbos_trio._engine.schedules import debouncer as module

    real = module.insert_queued
    calls = {"n": 0}

    async def insert(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise DBOSQueueDeduplicatedError("racer", "queue", "dedup")
        return await real(*args, **kwargs)

    monkeypatch.setattr(module, "insert_queued", insert)
    return calls


async def test_debounce_flip_clears_dedup(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_flip_clears_dedup"""
    started, release = trio.Event(), trio.Event()

    @dbos.workflow()
    async def workflow(value: int) -> int:
        started.set()
        await release.wait()
        return value

    debouncer = dbos.debouncer(workflow)
    async with dbos.launched():
        # A huge period keeps it DELAYED, marked debounced, holding the debounce key.
        handle = await debouncer.debounce("key", 1_000_000, 1)
        status, debounced, dedup, _ = await debounce_row(dbos_url, handle.workflow_id)
        assert (status, bool(debounced)) == ("DELAYED", True)
        assert dedup == f"{workflow.__qualname__}-key"
        # A bounce shortens the delay and replaces the input: the same workflow runs.
        again = await debouncer.debounce("key", 1, 2)
        assert again.workflow_id == handle.workflow_id
        await started.wait()
        # Starting it released the key (asserted while it runs: finishing releases it too).
        status, _, dedup, _ = await debounce_row(dbos_url, handle.workflow_id)
        assert (status, dedup) == ("PENDING", None)
        fresh = await debouncer.debounce("key", 1, 3)
        assert fresh.workflow_id != handle.workflow_id
        release.set()
        assert await again.get_result() == 2
        assert await fresh.get_result() == 3


async def test_debounce_inworkflow_replay_is_deterministic(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_inworkflow_replay_is_deterministic"""
    from support.dbos_fixtures import reexecute

    runs = {"child": 0, "parent": 0}

    @dbos.workflow()
    async def child(value: int) -> int:
        runs["child"] += 1
        return value

    debouncer = dbos.debouncer(child)

    @dbos.workflow()
    async def parent() -> str:
        runs["parent"] += 1
        return (await debouncer.debounce("replay-key", 1.0, 7)).workflow_id

    async with dbos.launched():
        with SetWorkflowID("parent"):
            child_id = await parent()
        # Replayed from its checkpoints: the same child, no second enqueue.
        assert await reexecute(dbos, dbos_url, parent, "parent") == child_id
        assert runs["parent"] == 2
        assert len(await dbos.list_workflows(name=child.__qualname__)) == 1
        assert await (await dbos.retrieve_workflow(child_id)).get_result() == 7
        assert runs["child"] == 1


async def test_debounce_retries_replayed_portable_dedup_error(
    dbos_url: str, autojump_clock: MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_retries_replayed_portable_dedup_error

    A fresh enqueue from a workflow that loses the deduplication race records the error as
    its checkpoint; with portable JSON it replays as a ``PortableWorkflowError`` naming
    ``DBOSQueueDeduplicatedError``, which the loop still takes as a lost race and bounces
    (upstream raises that replay form from a patched ``Queue.enqueue``; here the race is
    lost for real once, and the parent replayed)."""
    from dbos_trio import Config, PortableJSONSerializer

    from support.dbos_fixtures import reexecute

    dbos = DBOS(
        Config(app_name="wf-tests", database_url=dbos_url, serializer=PortableJSONSerializer())
    )

    @dbos.workflow()
    async def workflow(value: int) -> int:
        return value

    debouncer = dbos.debouncer(workflow)

    @dbos.workflow()
    async def parent() -> str:
        return (await debouncer.debounce("portable-key", 0.5, 5)).workflow_id

    calls = losing_the_race_once(monkeypatch)
    async with dbos.launched():
        with SetWorkflowID("parent"):
            child_id = await parent()
        assert calls["n"] == 2  # lost once, retried
        steps = await dbos.list_workflow_steps("parent")
        assert steps[1].function_name == workflow.__qualname__ and steps[1].error is not None
        assert await (await dbos.retrieve_workflow(child_id)).get_result() == 5
        # The replay meets the recorded error in its portable form and goes round again.
        assert await reexecute(dbos, dbos_url, parent, "parent") == child_id
        assert calls["n"] == 2


async def test_debounce_pinned_id_survives_enqueue_dedup_race(
    dbos: DBOS, autojump_clock: MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_pinned_id_survives_enqueue_dedup_race"""

    @dbos.workflow()
    async def workflow(value: int) -> int:
        return value

    debouncer = dbos.debouncer(workflow)
    calls = losing_the_race_once(monkeypatch)
    async with dbos.launched():
        with SetWorkflowID("pinned"):
            handle = await debouncer.debounce("pin-race-key", 0.5, 7)
        # The retried enqueue kept the pinned id rather than making one up.
        assert calls["n"] >= 2
        assert handle.workflow_id == "pinned"
        assert await handle.get_result() == 7


async def test_debounce_ownership_across_applications(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_ownership_across_applications

    (Upstream also pins its private ``_classify_bounce``; not ported.)"""
    dbos.register_queue("cross-app-queue")

    async def owner_of(workflow_id: str) -> str | None:
        status = await dbos.get_workflow_status(workflow_id)
        assert status is not None and status.status == "DELAYED"
        return status.application_name

    options = EnqueueOptions(workflow_name="shared_wf", queue_name="cross-app-queue")
    async with (
        dbos.launched(),
        Client(dbos_url) as nameless,
        Client(dbos_url, app_name="app-a") as client_a,
        Client(dbos_url, app_name="app-b") as client_b,
    ):
        # A huge period keeps the workflow DELAYED, holding the key.
        handle = await nameless.debouncer(options).debounce("k", 1_000_000, 1)
        assert await owner_of(handle.workflow_id) is None
        # Bouncing an unclaimed holder claims it, as a dequeue does.
        again = await client_a.debouncer(options).debounce("k", 1_000_000, 2)
        assert again.workflow_id == handle.workflow_id
        assert await owner_of(handle.workflow_id) == "app-a"
        # The same workflow and key from another application collides, not takes over.
        with pytest.raises(DBOSQueueDeduplicatedError):
            await client_b.debouncer(options).debounce("k", 1, 3)
        assert await owner_of(handle.workflow_id) == "app-a"
        # A client of no application has no identity to claim with: the owner stays.
        await nameless.debouncer(options).debounce("k", 1_000_000, 4)
        assert await owner_of(handle.workflow_id) == "app-a"
        await dbos.cancel_workflow(handle.workflow_id)


async def test_debounce_targets_another_application(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_targets_another_application"""

    @dbos.workflow()
    async def wf(value: int) -> int:
        return value

    async def owner_of(workflow_id: str) -> str | None:
        status = await dbos.get_workflow_status(workflow_id)
        assert status is not None and status.status == "DELAYED"
        return status.application_name

    debouncer = dbos.debouncer(wf, application_name="other-app")
    async with dbos.launched(), Client(dbos_url, app_name="app-a") as client:
        first = await debouncer.debounce("k", 1_000_000, 1)
        assert await owner_of(first.workflow_id) == "other-app"
        assert (await debouncer.debounce("k", 1_000_000, 2)).workflow_id == first.workflow_id
        # A row of another application carries no version: its latest version runs it.
        status = await dbos.get_workflow_status(first.workflow_id)
        assert status is not None and status.app_version is None
        # A client of its own application coalesces onto it when it names the target ...
        options = EnqueueOptions(workflow_name=wf.__qualname__, queue_name="_dbos_internal_queue")
        targeted = client.debouncer(attrs.evolve(options, application_name="other-app"))
        assert (await targeted.debounce("k", 1_000_000, 3)).workflow_id == first.workflow_id
        assert await owner_of(first.workflow_id) == "other-app"
        # ... and collides when it acts as itself.
        with pytest.raises(DBOSQueueDeduplicatedError):
            await client.debouncer(options).debounce("k", 1, 4)
        assert await owner_of(first.workflow_id) == "other-app"
        await dbos.cancel_workflow(first.workflow_id)


async def test_debounce_bounce_checkpoint_survives_post_commit_crash(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_debouncer.py::test_debounce_bounce_checkpoint_survives_post_commit_crash

    The bounce commits with its checkpoint, so an execution that died right after that
    commit and one replayed later meet the same checkpoint: here the parent finishes and is
    replayed (upstream crashes it after the commit with a private debug trigger). The
    replay returns the same handle and does not bounce again (the delay is unchanged)."""
    from support.dbos_fixtures import reexecute

    @dbos.workflow()
    async def workflow(value: int) -> int:
        return value

    debouncer = dbos.debouncer(workflow)

    @dbos.workflow()
    async def parent() -> str:
        return (await debouncer.debounce("post-commit-key", 2_000_000, 2)).workflow_id

    async with dbos.launched():
        held = await debouncer.debounce("post-commit-key", 1_000_000, 1)
        status, _, _, delay_before = await debounce_row(dbos_url, held.workflow_id)
        assert status == "DELAYED" and delay_before is not None
        await trio.sleep(1)
        with SetWorkflowID("parent"):
            assert await parent() == held.workflow_id
        _, _, _, delay_after_bounce = await debounce_row(dbos_url, held.workflow_id)
        assert delay_after_bounce > delay_before
        await trio.sleep(1)
        assert await reexecute(dbos, dbos_url, parent, "parent") == held.workflow_id
        _, _, _, delay_after_replay = await debounce_row(dbos_url, held.workflow_id)
        assert delay_after_replay == delay_after_bounce
        await dbos.cancel_workflow(held.workflow_id)
