"""What a launch starts, in order, once the system database is ready.

Queues declared before launch are upserted, abandoned work is re-enqueued (before launch
returns), and the dequeue supervisor starts in the executor's nursery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.admission import QueueConfig
from . import dequeue, queues, recovery

if TYPE_CHECKING:
    from .._executor import Executor


async def start(executor: Executor, declared_queues: list[QueueConfig]) -> None:
    await queues.register_queues(executor, declared_queues)
    executor.recovered_count = await recovery.reenqueue_abandoned(executor)
    await executor.nursery.start(dequeue.supervise, executor)
