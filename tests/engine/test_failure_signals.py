"""Failures make noise: a WARNING naming the workflow, and the application's hooks, once.

A queued workflow whose step raises the application's own error three times ends in ERROR:
the step's giving up and the workflow's failure are each logged at WARNING with ids, names,
the error's type and message; every ``@dbos.on_failure`` hook is called once with a
``WorkflowFailure`` after the outcome is durable; a hook that raises is logged and changes
nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
import trio

from dbos_trio import DBOS, DBOSMaxStepRetriesExceeded, SetWorkflowID, WorkflowFailure

from support.backends import status_row
from support.waiting import wait_until


class PaymentDeclined(Exception):
    pass


async def test_a_failed_workflow_is_logged_and_each_hook_runs_once_after_the_outcome(
    make_dbos: Callable[..., DBOS], dbos_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="dbos_trio")
    dbos = make_dbos()
    orders = dbos.register_queue("orders", polling_interval_sec=0.1)
    seen: list[tuple[WorkflowFailure, str]] = []

    @dbos.step(retries_allowed=True, max_attempts=3, interval_seconds=0.01)
    async def charge(order: str) -> None:
        raise PaymentDeclined(f"card declined for {order}")

    @dbos.workflow()
    async def checkout(order: str) -> str:
        await charge(order)
        return "paid"

    @dbos.on_failure
    async def alert(failure: WorkflowFailure) -> None:
        # Called after the outcome is durable: the row already says ERROR.
        seen.append((failure, (await status_row(dbos_url, failure.workflow_id))["status"]))

    @dbos.on_failure
    async def broken(failure: WorkflowFailure) -> None:
        raise RuntimeError("the pager is down")

    async with dbos.launched():
        with SetWorkflowID("order-1"):
            handle = await orders.enqueue(checkout, "order-1")
        with pytest.raises(DBOSMaxStepRetriesExceeded):
            await handle.get_result()
        await wait_until(lambda: len(seen) == 1, what="the failure hook")
        await trio.sleep(0.1)  # a second call, if there were one, would land now
    assert len(seen) == 1
    failure, status_then = seen[0]
    assert status_then == "ERROR"
    assert failure.workflow_id == "order-1" and failure.status == "ERROR"
    assert failure.workflow_name.endswith("checkout") and failure.queue_name == "orders"
    assert failure.error_type == "DBOSMaxStepRetriesExceeded"
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    gave_up = [m for m in messages if "failed 3 times, its maximum" in m]
    assert len(gave_up) == 1 and "order-1" in gave_up[0] and "PaymentDeclined" in gave_up[0]
    workflow_failed = [m for m in messages if m.startswith("workflow order-1 (")]
    assert len(workflow_failed) == 1 and "DBOSMaxStepRetriesExceeded" in workflow_failed[0]
    assert any("failure hook" in m and "broken" in m for m in messages)


def test_a_failure_hook_must_be_async_and_registered_before_launch(
    make_dbos: Callable[..., DBOS],
) -> None:
    dbos = make_dbos()

    def plain(failure: WorkflowFailure) -> None:
        return None

    with pytest.raises(TypeError, match="async def"):
        dbos.on_failure(plain)  # type: ignore[arg-type]
