"""What a launch starts, in order, once the system database is ready.

The backend's own tasks (LISTEN listener, NOTIFY notifier) start first, so no wakeup is
missed; then queues declared before launch are upserted, abandoned work is re-enqueued
(before launch returns), and the dequeue supervisor and the timeout sweep start. All of
them are tasks of the executor's nursery.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from ..core.admission import QueueConfig
from . import dequeue, queues, recovery, timeouts

if TYPE_CHECKING:
    from .._executor import Executor


async def start(executor: Executor, declared_queues: list[QueueConfig]) -> None:
    for task in executor.sysdb.background_tasks():
        await executor.nursery.start(task)
    await queues.register_queues(executor, declared_queues)
    executor.recovered_count = await recovery.reenqueue_abandoned(executor)
    interval = executor.background_interval
    if interval is None:
        await executor.nursery.start(dequeue.supervise, executor)
        await executor.nursery.start(timeouts.sweep, executor)
    else:
        await executor.nursery.start(partial(dequeue.supervise, executor, sweep_interval=interval))
        await executor.nursery.start(partial(timeouts.sweep, executor, interval=interval))
