"""Workflows that fan out into concurrent tasks, shared by the determinism tests and the
script a crash test SIGKILLs.

Every step returns a value computed from its arguments, so a replay that hands a task
another task's checkpoint returns a wrong result, never a silently right one. Step bodies
sleep a random moment first (a fresh random source in every process), so tasks finish —
and reach their next durable call — in a different order on every execution; ``runs``
counts how often each step body ran, by its arguments.

The patterns (the workflow's ``pattern`` argument):

* ``helpers``: 8 tasks, each ``results[i] = await fetch(i)``;
* ``nested``: 4 tasks, each opening a durable nursery of 3 tasks of its own, each of
  those opening another of 2 (two levels of nested helpers);
* ``varying``: 12 tasks, task ``i`` running ``i % 6`` steps (0 to 5) in sequence;
* ``fifty``: 50 tasks of 2 steps each.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from dbos_trio import DBOS, Config

APP_NAME = "fanout-tests"
APP_VERSION = "v1"
PATTERNS = ("helpers", "nested", "varying", "fifty")


@attrs.define
class FanoutApp:
    dbos: DBOS
    fanout: Callable[[str], Awaitable[list[int]]]
    runs: Counter[tuple[int, ...]]


def expected(pattern: str) -> list[int]:
    """What ``fanout(pattern)`` returns when every task gets its own checkpoints."""
    if pattern == "helpers":
        return [10 * i for i in range(8)]
    if pattern == "nested":
        return [100 * i + 10 * j + k for i in range(4) for j in range(3) for k in range(2)]
    if pattern == "varying":
        return [sum(1000 * i + k for k in range(i % 6)) for i in range(12)]
    return [2 * (10 * i) + 1 for i in range(50)]


def build_fanout_app(
    url: str, *, executor_id: str = "local", max_jitter: float = 0.003, **config: Any
) -> FanoutApp:
    dbos = DBOS(
        Config(
            app_name=APP_NAME,
            app_version=APP_VERSION,
            executor_id=executor_id,
            database_url=url,
            **config,
        )
    )
    jitter = random.Random()
    runs: Counter[tuple[int, ...]] = Counter()

    @dbos.step(name="fetch")
    async def fetch(*key: int) -> int:
        runs[key] += 1
        await trio.sleep(jitter.random() * max_jitter)
        return sum(key)

    async def helpers() -> list[int]:
        results = [0] * 8

        async def helper(i: int) -> None:
            results[i] = await fetch(10 * i)

        async with dbos.open_nursery() as nursery:
            for i in range(8):
                nursery.start_soon(helper, i)
        return results

    async def nested() -> list[int]:
        results = [0] * 24

        async def leaf(i: int, j: int, k: int) -> None:
            results[6 * i + 2 * j + k] = await fetch(100 * i, 10 * j, k)

        async def middle(i: int, j: int) -> None:
            async with dbos.open_nursery() as nursery:
                for k in range(2):
                    nursery.start_soon(leaf, i, j, k)

        async def top(i: int) -> None:
            async with dbos.open_nursery() as nursery:
                for j in range(3):
                    nursery.start_soon(middle, i, j)

        async with dbos.open_nursery() as nursery:
            for i in range(4):
                nursery.start_soon(top, i)
        return results

    async def varying() -> list[int]:
        results = [0] * 12

        async def helper(i: int) -> None:
            for k in range(i % 6):
                results[i] += await fetch(1000 * i, k)

        async with dbos.open_nursery() as nursery:
            for i in range(12):
                nursery.start_soon(helper, i)
        return results

    async def fifty() -> list[int]:
        results = [0] * 50

        async def helper(i: int) -> None:
            first = await fetch(10 * i)
            results[i] = await fetch(first, first, 1)

        async with dbos.open_nursery() as nursery:
            for i in range(50):
                nursery.start_soon(helper, i)
        return results

    bodies = {"helpers": helpers, "nested": nested, "varying": varying, "fifty": fifty}

    @dbos.workflow(name="fanout")
    async def fanout(pattern: str) -> list[int]:
        return await bodies[pattern]()

    return FanoutApp(dbos, fanout, runs)
