"""``dbos.run_step``, ``dbos.step_status``, the retry interval cap and retry logging.

On both backends; each test asserts the recorded checkpoints, the values the step saw,
or the log records a user gets.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import pytest

from dbos_trio import DBOS, DBOSException, SetWorkflowID, StepStatus
from dbos_trio._core.retry import RetryPolicy

from support.backends import steps_of

MakeDBOS = Callable[..., DBOS]


def test_the_retry_interval_is_capped_by_max_interval_seconds() -> None:
    policy = RetryPolicy(True, 6, 1.0, 10.0, max_interval_seconds=50.0)
    assert policy.schedule() == [1.0, 10.0, 50.0, 50.0, 50.0]
    assert RetryPolicy(True, 3, 1.0, 2.0).schedule() == [1.0, 2.0]
    # The hour cap stays whatever the option says.
    assert RetryPolicy(True, 2, 7200.0, 1.0, max_interval_seconds=1e6).schedule() == [3600.0]


async def test_run_step_checkpoints_any_callable_once(make_dbos: MakeDBOS, dbos_url: str) -> None:
    dbos = make_dbos()
    calls: list[str] = []

    def plain(x: int, *, scale: int) -> int:
        calls.append("plain")
        return x * scale

    async def coroutine(x: int) -> int:
        calls.append("coroutine")
        return x + 1

    @dbos.workflow()
    async def uses_run_step(x: int) -> int:
        a = await dbos.run_step(functools.partial(plain, scale=10), x, name="scaled")
        b = await dbos.run_step(coroutine, a)
        return b

    async with dbos.launched():
        with SetWorkflowID("rs-1"):
            assert await uses_run_step(2) == 21
        with SetWorkflowID("rs-1"):
            assert await uses_run_step(2) == 21  # the stored outcome, nothing re-runs
        # Outside a workflow it is a plain call.
        assert await dbos.run_step(coroutine, 1) == 2
        with pytest.raises(DBOSException, match="callable"):
            dbos.run_step(42)  # type: ignore[arg-type]
        with pytest.raises(DBOSException, match="max_attempts"):
            dbos.run_step(coroutine, 1, max_attempts=0)
        with pytest.raises(DBOSException, match="async def"):
            dbos.run_step(plain, 1, timeout_seconds=1)
    assert calls == ["plain", "coroutine", "coroutine"]
    names = [step[1] for step in await steps_of(dbos_url, "rs-1")]
    assert names == ["scaled", coroutine.__qualname__]


async def test_step_status_shows_the_attempt_and_retries_are_logged_at_info(
    make_dbos: MakeDBOS, caplog: pytest.LogCaptureFixture
) -> None:
    dbos = make_dbos()
    seen: list[StepStatus | None] = []

    @dbos.step(retries_allowed=True, max_attempts=3, interval_seconds=0.01, backoff_rate=1.0)
    async def flaky() -> str:
        seen.append(dbos.step_status)
        if len(seen) < 3:
            raise RuntimeError(f"boom {len(seen)}")
        return "ok"

    @dbos.step()
    def plain_step() -> StepStatus | None:
        return dbos.step_status

    @dbos.workflow()
    async def flow() -> tuple[str, StepStatus | None]:
        return await flaky(), await plain_step()

    async with dbos.launched():
        assert dbos.step_status is None
        with caplog.at_level(logging.INFO, logger="dbos_trio.step"), SetWorkflowID("status-1"):
            result, plain_status = await flow()
    assert result == "ok"
    assert seen == [StepStatus(1, 0, 3), StepStatus(1, 1, 3), StepStatus(1, 2, 3)]
    assert plain_status == StepStatus(2, None, None)
    retries = [r for r in caplog.records if r.name == "dbos_trio.step"]
    assert [r.levelno for r in retries] == [logging.INFO, logging.INFO]
    assert "attempt 1 failed" in retries[0].getMessage()
    assert "attempt 2 failed" in retries[1].getMessage()
    assert "boom 1" in retries[0].getMessage()
