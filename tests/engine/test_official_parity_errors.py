"""Error texts and strictness found different from dbos 3.4 by porting its test suite
(issue 32).

Code that matches on dbos 3.4's messages keeps working: each message starts with dbos
3.4's text (ours may say more after it). And what dbos 3.4 accepts, dbos_trio accepts:
``fork_workflow(id, 0)`` and ``list_schedules(status=<unknown>)``. The scenarios are
written anew for dbos_trio.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from dbos_trio import (
    DBOS,
    DBOSArgumentTypeError,
    DBOSException,
    DBOSInvalidArgumentError,
    DBOSNonExistentWorkflowError,
    EnqueueOptions,
    SendMessage,
    SetEnqueueOptions,
    SetWorkflowID,
)

MakeDBOS = Callable[..., DBOS]


def message_of(raised: pytest.ExceptionInfo[DBOSException]) -> str:
    return raised.value.message


def test_enqueue_options_are_refused_in_dbos_3_4_words() -> None:
    with pytest.raises(DBOSInvalidArgumentError) as priority:
        SetEnqueueOptions(priority=0)
    assert message_of(priority) == "Invalid priority 0. Priority must be between 1~2147483647."
    with pytest.raises(DBOSArgumentTypeError) as typed:
        SetEnqueueOptions(priority="high")  # type: ignore[arg-type]
    assert message_of(typed).startswith("Invalid priority 'high'.")
    with pytest.raises(DBOSInvalidArgumentError) as policy:
        SetEnqueueOptions(duplication_policy="ignore")  # type: ignore[arg-type]
    assert message_of(policy) == (
        "Invalid duplication_policy ignore. Must be either 'reject' or 'return-existing'."
    )
    with pytest.raises(DBOSInvalidArgumentError) as blank_id:
        EnqueueOptions(workflow_name="w", queue_name="q", workflow_id="  ")
    assert message_of(blank_id).startswith(
        "Invalid workflow ID '  ': workflow IDs must be non-empty and cannot be only whitespace."
    )
    with pytest.raises(DBOSArgumentTypeError) as attributes:
        EnqueueOptions(workflow_name="w", queue_name="q", attributes={"s": {1, 2}})
    assert message_of(attributes).startswith("Invalid workflow attributes {'s': {1, 2}}.")
    assert "Attributes must be JSON-serializable" in message_of(attributes)


async def test_calls_are_refused_and_missing_workflows_named_in_dbos_3_4_words(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    queue = dbos.register_queue("q")

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with pytest.raises(DBOSNonExistentWorkflowError) as missing:
            await dbos.retrieve_workflow("nobody")
        assert message_of(missing) == "Non-existent target workflow ID: nobody"
        with pytest.raises(DBOSNonExistentWorkflowError) as unsent:
            await dbos.send("nobody", "hi")
        assert message_of(unsent) == "Non-existent `send` destination workflow ID: nobody"

        with (
            SetEnqueueOptions(duplication_policy="return-existing"),
            pytest.raises(DBOSInvalidArgumentError) as no_dedup,
        ):
            await queue.enqueue(noop)
        assert message_of(no_dedup) == (
            "duplication_policy 'return-existing' requires a deduplication_id."
        )

        with SetWorkflowID("w"):
            await noop()
        with pytest.raises(DBOSInvalidArgumentError) as keys:
            await dbos.send_bulk([SendMessage("w", 1, None, "k"), SendMessage("w", 2, None, "k")])
        assert message_of(keys).startswith("send_bulk received duplicate idempotency keys: k")
        with pytest.raises(DBOSInvalidArgumentError) as negative:
            dbos.read_stream("w", "s", timeout_seconds=-1)
        assert message_of(negative).startswith("timeout_seconds must not be negative, got -1")
        with pytest.raises(DBOSArgumentTypeError) as attributes:
            await dbos.update_workflow_attributes("w", {"when": object()})
        assert message_of(attributes).startswith("Invalid workflow attributes ")
        assert "Attributes must be JSON-serializable" in message_of(attributes)


async def test_a_fork_from_step_zero_reruns_everything_as_from_step_one(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    runs: list[int] = []

    @dbos.step()
    async def count() -> int:
        runs.append(len(runs) + 1)
        return len(runs)

    @dbos.workflow()
    async def work() -> int:
        return await count()

    async with dbos.launched():
        with SetWorkflowID("orig"):
            assert await work() == 1
        forked = await dbos.fork_workflow("orig", 0)
        assert await forked.get_result() == 2  # the step ran again
        with pytest.raises(DBOSInvalidArgumentError, match="start_step"):
            await dbos.fork_workflow("orig", -1)


async def test_listing_schedules_by_a_status_no_schedule_has_lists_nothing(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    async with dbos.launched():
        assert await dbos.list_schedules(status="NONEXISTENT") == []


async def test_a_value_that_cannot_be_serialized_raises_a_type_error(make_dbos: MakeDBOS) -> None:
    """dbos 3.4 raises the serializer's ``TypeError`` for a step result, a workflow result
    or a message it cannot store; ours is a ``DBOSException`` and a ``TypeError``."""
    dbos = make_dbos()

    @dbos.step()
    async def bad_step() -> Any:
        return threading.Lock()

    @dbos.workflow()
    async def calls_bad_step() -> str:
        try:
            await bad_step()
        except TypeError as error:
            return type(error).__name__
        return "stored"

    @dbos.workflow()
    async def bad_result() -> Any:
        return threading.Lock()

    @dbos.workflow()
    async def echo(value: Any) -> Any:
        return value

    async with dbos.launched():
        with SetWorkflowID("s"):
            assert await calls_bad_step() == "DBOSArgumentTypeError"
        with SetWorkflowID("r"), pytest.raises(TypeError) as result:
            await bad_result()
        assert isinstance(result.value, DBOSException)
        with pytest.raises(TypeError, match="cannot serialize"):
            await dbos.send("s", threading.Lock())
        with pytest.raises(TypeError, match="cannot serialize the arguments"):
            await dbos.start_workflow(echo, threading.Lock())
