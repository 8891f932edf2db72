"""GroupCommit's coordination, with in-memory writers whose commits take virtual time.

What is checked: a lone caller writes alone; callers arriving during a commit share the
next one; callers ready to run together share one commit (the first lets the others
queue); results go to their own callers; a batch failing as a whole is re-done one
write at a time (each caller meets its own error only); a cancelled queued caller writes
nothing; a leader cancelled mid-commit leaves no follower waiting.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import trio
import trio.testing

from dbos_trio._sysdb.group_commit import GroupCommit

COMMIT_S = 0.01


class Store:
    def __init__(self) -> None:
        self.rows: list[int] = []
        self.singles = 0
        self.batches: list[list[int]] = []
        self.bad: set[int] = set()  # items whose write raises (alone or in any batch)
        self.fail_batches = False

    async def one(self, item: int) -> str:
        self.singles += 1
        await trio.sleep(COMMIT_S)
        if item in self.bad:
            raise ValueError(f"cannot store {item}")
        self.rows.append(item)
        return f"ok {item}"

    async def many(self, items: Sequence[int]) -> list[str]:
        self.batches.append(list(items))
        await trio.sleep(COMMIT_S)
        if self.fail_batches or self.bad & set(items):
            raise ValueError("the batch as a whole failed")
        self.rows.extend(items)
        return [f"ok {item}" for item in items]


def group(store: Store, **options: int) -> GroupCommit[int, str]:
    return GroupCommit(store.one, store.many, **options)


async def submit_all(
    commits: GroupCommit[int, str], items: range, *, first_alone: bool = False
) -> dict[int, object]:
    """Submit every item at once; per item, its result or its error. ``first_alone``: the
    first item is submitted (and writing alone) before the others, whatever order Trio runs
    the tasks in (which is shuffled after a Hypothesis test has run in the process)."""
    results: dict[int, object] = {}

    async def one(item: int) -> None:
        try:
            results[item] = await commits.submit(item)
        except ValueError as error:
            results[item] = error

    async with trio.open_nursery() as nursery:
        rest = iter(items)
        if first_alone:
            nursery.start_soon(one, next(rest))
            await trio.testing.wait_all_tasks_blocked()
        for item in rest:
            nursery.start_soon(one, item)
    return results


async def test_a_lone_caller_writes_alone_each_time(autojump_clock: trio.abc.Clock) -> None:
    store = Store()
    commits = group(store)
    for item in range(5):
        assert await commits.submit(item) == f"ok {item}"
    assert store.singles == 5 and store.batches == [] and store.rows == list(range(5))


async def test_callers_arriving_during_a_commit_share_the_next_one(
    autojump_clock: trio.abc.Clock,
) -> None:
    store = Store()
    commits = group(store)
    results = await submit_all(commits, range(50), first_alone=True)
    assert results == {item: f"ok {item}" for item in range(50)}
    # The first writes alone; the 49 that queued behind it go in one commit.
    assert store.singles == 1 and [len(batch) for batch in store.batches] == [49]
    assert sorted(store.rows) == list(range(50))
    assert (commits.batches, commits.batched_writes) == (1, 49)


async def test_callers_ready_together_share_one_commit_once_writers_came_together(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Cohorts (workflows claimed together finishing together). The first after a quiet
    # spell writes its first member alone, as a sequential writer would; from then on the
    # first caller lets the others ready to run queue before it writes: one commit for the
    # whole cohort, not the first alone and then the rest.
    store = Store()
    commits = group(store)
    first = await submit_all(commits, range(16))
    assert first == {item: f"ok {item}" for item in range(16)}
    assert store.singles == 1 and [len(batch) for batch in store.batches] == [15]
    second = await submit_all(commits, range(16, 32))
    assert second == {item: f"ok {item}" for item in range(16, 32)}
    assert store.singles == 1 and [sorted(b) for b in store.batches[1:]] == [list(range(16, 32))]
    # A sequential writer after that pays one pass of the scheduler once, then writes
    # alone again without one.
    for item in range(32, 35):
        assert await commits.submit(item) == f"ok {item}"
    assert store.singles == 1 + 3


async def test_a_leader_cancelled_before_its_commit_leaves_no_follower_waiting(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The first caller leads but is cancelled while it lets the others queue (before any
    # write): the next in line leads the others' commit, and nobody is left waiting.
    store = Store()
    commits = group(store)
    results: dict[int, str] = {}
    cancelled = trio.CancelScope()
    cancelled.cancel()
    led: list[bool] = []

    async def leader() -> None:
        with cancelled:
            led.append(True)
            results[0] = await commits.submit(0)

    async def follower(item: int) -> None:
        results[item] = await commits.submit(item)

    await submit_all(commits, range(100, 104))  # writers came together: the first leads
    store.rows.clear()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leader)
        for item in range(1, 6):
            nursery.start_soon(follower, item)
    assert led == [True] and cancelled.cancelled_caught
    assert results == {item: f"ok {item}" for item in range(1, 6)}
    # Had a follower run first and led, the cancelled caller's write may have been taken
    # into that commit before its cancellation: then it committed with it, as documented.
    assert {1, 2, 3, 4, 5} <= set(store.rows) <= {0, 1, 2, 3, 4, 5}


async def test_batches_are_capped(autojump_clock: trio.abc.Clock) -> None:
    store = Store()
    results = await submit_all(group(store, max_batch=20), range(50))
    assert len(results) == 50 and sorted(store.rows) == list(range(50))
    assert [len(batch) for batch in store.batches] == [20, 20, 9]


async def test_a_failing_batch_is_redone_one_by_one_and_only_the_bad_item_fails(
    autojump_clock: trio.abc.Clock,
) -> None:
    store = Store()
    store.bad = {7}
    # Item 0 writes alone, so the bad item is in the batch (were it first, it would fail
    # alone and the others would batch without it).
    results = await submit_all(group(store), range(20), first_alone=True)
    assert isinstance(results.pop(7), ValueError)
    assert results == {item: f"ok {item}" for item in range(20) if item != 7}
    assert sorted(store.rows) == [item for item in range(20) if item != 7]
    assert store.singles == 1 + 19  # the first alone, then each of the failed batch


async def test_a_cancelled_queued_caller_writes_nothing(autojump_clock: trio.abc.Clock) -> None:
    store = Store()
    commits = group(store)
    scope = trio.CancelScope()

    async def cancellable(item: int) -> None:
        with scope:
            await commits.submit(item)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(commits.submit, 1)  # writes alone
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(commits.submit, 2)  # queued
        nursery.start_soon(cancellable, 3)  # queued, then cancelled
        await trio.testing.wait_all_tasks_blocked()
        scope.cancel()
    assert scope.cancelled_caught
    assert sorted(store.rows) == [1, 2] and store.singles == 2  # 2 ended up alone


async def test_a_leader_cancelled_mid_commit_leaves_no_follower_waiting(
    autojump_clock: trio.abc.Clock,
) -> None:
    store = Store()
    commits = group(store)
    results: dict[int, str] = {}
    leader_scope = trio.CancelScope()

    async def call(item: int, scope: trio.CancelScope | None = None) -> None:
        with scope or trio.CancelScope():
            results[item] = await commits.submit(item)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, 0)  # writes alone
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(call, 1, leader_scope)  # queues first: leads the next batch
        await trio.testing.wait_all_tasks_blocked()
        for item in range(2, 6):
            nursery.start_soon(call, item)
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(COMMIT_S * 1.5)  # the batch is now in flight
        assert [sorted(batch) for batch in store.batches] == [[1, 2, 3, 4, 5]]
        leader_scope.cancel()
    assert 1 not in results
    assert results == {item: f"ok {item}" for item in (0, 2, 3, 4, 5)}
    assert sorted(store.rows) == [0, 2, 3, 4, 5]  # the cancelled batch wrote nothing


@pytest.mark.parametrize("flushes", [1, 3])
async def test_every_caller_gets_its_own_result_under_churn(
    autojump_clock: trio.abc.Clock, flushes: int
) -> None:
    store = Store()
    commits = group(store, max_flushes=flushes, max_batch=7)
    results: dict[int, object] = {}

    async def wave(start: int) -> None:
        results.update(await submit_all(commits, range(start, start + 25)))

    async with trio.open_nursery() as nursery:
        for start in range(0, 100, 25):
            nursery.start_soon(wave, start)
            await trio.sleep(COMMIT_S / 3)
    assert results == {item: f"ok {item}" for item in range(100)}
    assert sorted(store.rows) == list(range(100))
