"""The clock, random numbers and fresh ids, read durably from a workflow body.

A workflow body is re-run from its checkpoints after a crash, a recovery or a resume, and
replayed by ``dbos-trio check``; a value it reads from the world must be the same every
time, or the branch it picks (and so the step ids after it) may change. Each helper here
is one step, checkpointed under the cross-run name ``DBOS.now``, ``DBOS.random`` or
``DBOS.uuid4``: the first execution reads the value and records it, every later one gets
the recorded value back. Outside a workflow body (or inside a step) it is a plain read.

Invariant: the time comes from the executor's :class:`~dbos_trio._clock.Clock`, so under
a ``MockClock`` it is virtual like every other time of the engine.
"""

from __future__ import annotations

import random as _random
import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from dbos_trio._engine.workflows.checkpoint import as_step

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime

NOW = "DBOS.now"
RANDOM = "DBOS.random"
UUID4 = "DBOS.uuid4"


def now(runtime: Runtime) -> Coroutine[Any, Any, float]:
    """Seconds since the epoch, recorded once per call site of a workflow body."""

    async def read() -> float:
        return runtime.clock.now()

    return as_step(NOW, read)


def random() -> Coroutine[Any, Any, float]:
    """A float in [0, 1), recorded once per call site of a workflow body."""

    async def draw() -> float:
        return _random.random()

    return as_step(RANDOM, draw)


def uuid4() -> Coroutine[Any, Any, str]:
    """A random UUID as text, recorded once per call site of a workflow body."""

    async def make() -> str:
        return str(uuid.uuid4())

    return as_step(UUID4, make)
