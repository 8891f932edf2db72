"""A rate-limited worker wakes when its window admits the next start, not at its next
poll; on both backends.

The queue is polled once an hour: the third of three workflows on a queue allowing two
starts per two seconds can only start within the hang guard if its worker, held back by
the full window, slept until the window reopened. The wait itself is observed
(``wakeup_waits``): one no longer than the period.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import trio

from dbos_trio import DBOS, RateLimit
from dbos_trio._engine.runtime.dequeue import rate_window_wait
from dbos_trio._sysdb.wakeups import queue_key

from support.time_fixtures import executor_of, running
from support.waiting import HANG_GUARD

PERIOD = 2.0


async def test_a_worker_held_back_by_its_rate_limit_sleeps_until_the_window_reopens(
    new_dbos: Callable[..., DBOS], wakeup_waits: list[tuple[str, float]]
) -> None:
    queue_name = f"rq-{uuid.uuid4().hex[:8]}"
    dbos = new_dbos()
    queue = dbos.register_queue(
        queue_name, limiter=RateLimit(limit=2, period=PERIOD), polling_interval_sec=3600
    )

    @dbos.workflow(name="rate.noop")
    async def noop(i: int) -> int:
        return i

    async with running(dbos):
        handles = [await queue.enqueue(noop, i) for i in range(3)]
        with trio.fail_after(HANG_GUARD):
            assert [await h.get_result() for h in handles] == [0, 1, 2]
        # The worker's waits: one until the window reopened, never more than the period.
        waits = [t for key, t in wakeup_waits if key == queue_key(queue_name)]
        assert any(t <= PERIOD * 1.05 for t in waits)
        # With the window no longer full, nothing holds the worker back: it polls.
        executor = executor_of(dbos)
        config = await executor.sysdb.get_queue(queue_name)
        assert config is not None
        await trio.sleep(PERIOD)
        assert await rate_window_wait(executor, config) == float("inf")
