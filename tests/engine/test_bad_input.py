"""Bad input through the public API: a clear error before anything is written, the same
on both backends.

Each reproduction of issue 13's lists "Most bad values reach the database" and
"Write-then-raise and wrong targets" is a test here, on PostgreSQL and on SQLite. Outside
a workflow every bad call — a ``DBOS`` method, ``Queue.enqueue``, the ``SetWorkflowID`` /
``SetWorkflowTimeout`` / ``SetEnqueueOptions`` blocks, a ``Client`` method,
``EnqueueOptions``, ``register_queue``, ``step(...)`` — raises the documented class
(:class:`DBOSInvalidArgumentError`, :class:`DBOSArgumentTypeError`,
:class:`DBOSConfigError`, :class:`DBOSWorkflowIDInUseError`) with a message naming the
argument, and a checksum of every table of the system schema
(:mod:`support.checksums`) is the same after the call as before it. Inside a workflow
body a bad value ends that workflow as ERROR with the same error — recorded, so
``get_result`` raises it, on both backends alike — instead of leaving it PENDING.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any

import attrs
import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSArgumentTypeError,
    DBOSConfigError,
    DBOSConfiguredInstance,
    DBOSException,
    DBOSInvalidArgumentError,
    DBOSWorkflowIDInUseError,
    EnqueueOptions,
    Queue,
    RateLimit,
    SetEnqueueOptions,
    SetWorkflowID,
    SetWorkflowTimeout,
)

from support.backends import query, status_row
from support.checksums import assert_unchanged, changed_tables, table_checksums

APP = "bad-input"
SERVED = "served"
PARTITIONED = "partitioned"
UNSERVED = "nobody-serves-this"

INVALID = DBOSInvalidArgumentError
WRONG_TYPE = DBOSArgumentTypeError

NUL = "nul\x00here"
SURROGATE = "lone\ud800surrogate"
HUGE = "x" * 10_000  # "index row requires 11464 bytes" on PostgreSQL before validation
MEGABYTE = "q" * 1_000_000
JUST_OVER = "€" * 201  # 603 bytes

Workflow = Callable[..., Any]


@pytest.fixture
def url(system_database_url: str) -> str:
    return system_database_url


@attrs.define
class World:
    """A launched application, an open client, and rows to aim at."""

    url: str
    dbos: DBOS
    client: Client
    echo: Callable[..., Any]
    served: Queue
    partitioned: Queue
    done: str  # a workflow that ended in SUCCESS
    parked: list[str]  # ENQUEUED on a queue nobody serves: "a", "b", "c"
    cancelled: str  # a CANCELLED workflow, resumable


def make_app(url: str) -> tuple[DBOS, dict[str, Any]]:
    dbos = DBOS(Config(app_name=APP, database_url=url, app_version="v1", executor_id="x1"))

    @dbos.workflow(name="echo")
    async def echo(value: Any) -> Any:
        return value

    @dbos.workflow(name="misbehave")
    async def misbehave(action: str, target: str) -> str:
        await BODY_ACTIONS[action](dbos, echo, target)
        return "not reached"

    @dbos.workflow(name="publisher")
    async def publisher() -> str:
        await dbos.set_event("ready", 1)
        await dbos.write_stream("numbers", 1)
        await dbos.close_stream("numbers")
        return "published"

    served = dbos.register_queue(SERVED, polling_interval_sec=0.1)
    partitioned = dbos.register_queue(
        PARTITIONED, partition_concurrency=1, polling_interval_sec=0.1
    )
    workflows = {
        "echo": echo,
        "misbehave": misbehave,
        "publisher": publisher,
        "served": served,
        "partitioned": partitioned,
    }
    return dbos, workflows


@asynccontextmanager
async def world(url: str) -> AsyncIterator[World]:
    dbos, workflows = make_app(url)
    async with dbos.launched(), Client(url, app_name=APP, outcome_poll_interval=0.1) as client:
        echo = workflows["echo"]
        with SetWorkflowID("done"):
            assert await workflows["publisher"]() == "published"
        for parked in ("a", "b", "c"):
            with SetWorkflowID(parked):
                await dbos.enqueue_workflow(UNSERVED, echo, parked)
        with SetWorkflowID("cancelled"):
            await dbos.enqueue_workflow(UNSERVED, echo, "cancelled")
        await dbos.cancel_workflow("cancelled")
        yield World(
            url=url,
            dbos=dbos,
            client=client,
            echo=echo,
            served=workflows["served"],
            partitioned=workflows["partitioned"],
            done="done",
            parked=["a", "b", "c"],
            cancelled="cancelled",
        )


async def _outcome(result: Any) -> Any:
    """Drive what a call returned far enough to raise: await it, or take one item."""
    if hasattr(result, "__anext__"):
        return await result.__anext__()
    if inspect.isawaitable(result):
        return await result
    return result


async def refused_without_writing(
    url: str, call: Callable[[], Any], kind: type[BaseException], *words: str
) -> BaseException:
    """``call()`` (awaited if it returns an awaitable) raises exactly ``kind`` with every
    one of ``words`` in its message, and every system table is unchanged."""
    before = await table_checksums(url)
    with pytest.raises(BaseException) as raised:
        await _outcome(call())
    error = raised.value
    assert type(error) is kind, f"expected {kind.__name__}, got {type(error).__name__}: {error}"
    for word in words:
        assert word in str(error), (word, str(error))
    await assert_unchanged(url, before, f"the refused call ({error})")
    return error


def within(block: AbstractContextManager[Any], call: Callable[[], Any]) -> Any:
    """``call()`` inside ``block``: the coroutine runs with the block's options in force."""

    async def run() -> Any:
        with block:
            return await _outcome(call())

    return run()


# ----------------------------------------------------------------- outside a workflow

Call = Callable[[World], Any]


def case(name: str, call: Call, kind: type[BaseException], *words: str) -> Any:
    return pytest.param(call, kind, words, id=name)


def enqueue_options(**fields: Any) -> EnqueueOptions:
    fields.setdefault("workflow_name", "echo")
    fields.setdefault("queue_name", SERVED)
    return EnqueueOptions(**fields)


DBOS_CASES = [
    # --- send: NUL, surrogate, oversized, and a non-str topic (stored, then raised)
    case("send-topic-int", lambda w: w.dbos.send(w.done, "m", topic=1), WRONG_TYPE, "topic"),
    case("send-topic-nul", lambda w: w.dbos.send(w.done, "m", topic=NUL), INVALID, "topic", "NUL"),
    case(
        "send-topic-surrogate",
        lambda w: w.dbos.send(w.done, "m", topic=SURROGATE),
        INVALID,
        "topic",
        "surrogate",
    ),
    case("send-topic-huge", lambda w: w.dbos.send(w.done, "m", topic=HUGE), INVALID, "topic"),
    case("send-topic-empty", lambda w: w.dbos.send(w.done, "m", topic=""), INVALID, "topic"),
    case(
        "send-destination-nul",
        lambda w: w.dbos.send(NUL, "m"),
        INVALID,
        "destination_id",
        "NUL",
    ),
    case(
        "send-destination-surrogate",
        lambda w: w.dbos.send(SURROGATE, "m"),
        INVALID,
        "destination_id",
    ),
    case("send-destination-huge", lambda w: w.dbos.send(HUGE, "m"), INVALID, "destination_id"),
    case("send-destination-int", lambda w: w.dbos.send(7, "m"), WRONG_TYPE, "destination_id"),
    case(
        "send-idempotency-key-nul",
        lambda w: w.dbos.send(w.done, "m", idempotency_key=NUL),
        INVALID,
        "idempotency_key",
    ),
    case(
        "send-idempotency-key-huge",
        lambda w: w.dbos.send(w.done, "m", idempotency_key=HUGE),
        INVALID,
        "idempotency_key",
    ),
    # --- events and streams
    case("get-event-key-int", lambda w: w.dbos.get_event(w.done, 1), WRONG_TYPE, "key"),
    case("get-event-key-nul", lambda w: w.dbos.get_event(w.done, NUL), INVALID, "key", "NUL"),
    case("get-event-key-huge", lambda w: w.dbos.get_event(w.done, HUGE), INVALID, "key"),
    case(
        "get-event-id-surrogate", lambda w: w.dbos.get_event(SURROGATE, "k"), INVALID, "workflow_id"
    ),
    case(
        "get-event-timeout-nan",
        lambda w: w.dbos.get_event(w.done, "ready", timeout_seconds=math.nan),
        INVALID,
        "timeout_seconds",
        "number of seconds",
    ),
    case(
        "get-event-timeout-str",
        lambda w: w.dbos.get_event(w.done, "ready", timeout_seconds="1"),
        WRONG_TYPE,
        "timeout_seconds",
    ),
    case("read-stream-key-int", lambda w: w.dbos.read_stream(w.done, 1), WRONG_TYPE, "key"),
    case("read-stream-key-nul", lambda w: w.dbos.read_stream(w.done, NUL), INVALID, "key"),
    case(
        "read-stream-id-huge", lambda w: w.dbos.read_stream(HUGE, "numbers"), INVALID, "workflow_id"
    ),
    # --- introspection
    case("retrieve-nul", lambda w: w.dbos.retrieve_workflow(NUL), INVALID, "workflow_id", "NUL"),
    case(
        "retrieve-huge", lambda w: w.dbos.retrieve_workflow(HUGE), INVALID, "workflow_id", "bytes"
    ),
    case(
        "status-surrogate", lambda w: w.dbos.get_workflow_status(SURROGATE), INVALID, "workflow_id"
    ),
    case("steps-int", lambda w: w.dbos.list_workflow_steps(3), WRONG_TYPE, "workflow_id"),
    case("list-limit-negative", lambda w: w.dbos.list_workflows(limit=-1), INVALID, "limit"),
    case("list-offset-negative", lambda w: w.dbos.list_workflows(offset=-5), INVALID, "offset"),
    case("list-limit-float", lambda w: w.dbos.list_workflows(limit=1.5), WRONG_TYPE, "limit"),
    case(
        "list-start-time-yesterday",
        lambda w: w.dbos.list_workflows(start_time="yesterday"),
        INVALID,
        "start_time",
        "ISO 8601",
    ),
    case(
        "list-end-time-nan",
        lambda w: w.dbos.list_workflows(end_time=math.nan),
        INVALID,
        "end_time",
        "NaN",
    ),
    case("list-status-bogus", lambda w: w.dbos.list_workflows(status="BOGUS"), INVALID, "status"),
    case("list-name-nul", lambda w: w.dbos.list_workflows(name=NUL), INVALID, "name"),
    case(
        "list-ids-nul",
        lambda w: w.dbos.list_workflows(workflow_ids=["a", NUL]),
        INVALID,
        "workflow_ids[1]",
    ),
    case(
        "list-queued-limit-negative",
        lambda w: w.dbos.list_queued_workflows(limit=-1),
        INVALID,
        "limit",
    ),
    case("retrieve-queue-nul", lambda w: w.dbos.retrieve_queue(NUL), INVALID, "name"),
    case("delete-queue-surrogate", lambda w: w.dbos.delete_queue(SURROGATE), INVALID, "name"),
    # --- management
    case("cancel-nul", lambda w: w.dbos.cancel_workflow(NUL), INVALID, "workflow_id"),
    case(
        "cancel-children-int",
        lambda w: w.dbos.cancel_workflow("a", cancel_children=1),
        WRONG_TYPE,
        "cancel_children",
    ),
    case("delete-huge", lambda w: w.dbos.delete_workflow(HUGE), INVALID, "workflow_id"),
    case(
        "resume-queue-empty",
        lambda w: w.dbos.resume_workflow(w.cancelled, queue_name=""),
        INVALID,
        "queue_name",
    ),
    case(
        "resume-queue-nul",
        lambda w: w.dbos.resume_workflow(w.cancelled, queue_name=NUL),
        INVALID,
        "queue_name",
    ),
    # Step 0 forks as step 1 (dbos 3.4 accepts it): a negative step is the bad value.
    case("fork-step-negative", lambda w: w.dbos.fork_workflow(w.done, -1), INVALID, "start_step"),
    case("fork-step-str", lambda w: w.dbos.fork_workflow(w.done, "1"), WRONG_TYPE, "start_step"),
    case(
        "fork-version-surrogate",
        lambda w: w.dbos.fork_workflow(w.done, 1, application_version=SURROGATE),
        INVALID,
        "application_version",
    ),
    case(
        "fork-queue-empty",
        lambda w: w.dbos.fork_workflow(w.done, 1, queue_name=""),
        INVALID,
        "queue_name",
    ),
    case(
        "delay-nan",
        lambda w: w.dbos.set_workflow_delay("a", delay_seconds=math.nan),
        INVALID,
        "delay_seconds",
        "NaN",
    ),
    case(
        "delay-inf",
        lambda w: w.dbos.set_workflow_delay("a", delay_seconds=math.inf),
        INVALID,
        "delay_seconds",
    ),
    case(
        "delay-1e300",
        lambda w: w.dbos.set_workflow_delay("a", delay_seconds=1e300),
        INVALID,
        "delay_seconds",
    ),
    case(
        "delay-negative",
        lambda w: w.dbos.set_workflow_delay("a", delay_seconds=-1),
        INVALID,
        "delay_seconds",
    ),
    case(
        "delay-str",
        lambda w: w.dbos.set_workflow_delay("a", delay_seconds="1"),
        WRONG_TYPE,
        "delay_seconds",
    ),
    # --- starting and enqueueing
    case(
        "enqueue-queue-nul",
        lambda w: w.dbos.enqueue_workflow(NUL, w.echo, 1),
        INVALID,
        "queue_name",
    ),
    case(
        "enqueue-queue-surrogate",
        lambda w: w.dbos.enqueue_workflow(SURROGATE, w.echo, 1),
        INVALID,
        "queue_name",
    ),
    case(
        "enqueue-queue-megabyte",
        lambda w: w.dbos.enqueue_workflow(MEGABYTE, w.echo, 1),
        INVALID,
        "queue_name",
    ),
    case("enqueue-queue-int", lambda w: w.dbos.enqueue_workflow(1, w.echo, 1), WRONG_TYPE),
    case(
        "set-workflow-id-nul",
        lambda w: within(SetWorkflowID(NUL), lambda: w.echo(1)),
        INVALID,
        "workflow_id",
        "NUL",
    ),
    case(
        "set-workflow-id-surrogate",
        lambda w: within(SetWorkflowID(SURROGATE), lambda: w.dbos.start_workflow(w.echo, 1)),
        INVALID,
        "workflow_id",
        "surrogate",
    ),
    case(
        "set-workflow-id-huge",
        lambda w: within(SetWorkflowID(HUGE), lambda: w.served.enqueue(w.echo, 1)),
        INVALID,
        "workflow_id",
        "bytes",
    ),
    case(
        "set-workflow-id-601-bytes",
        lambda w: within(SetWorkflowID(JUST_OVER), lambda: w.echo(1)),
        INVALID,
        "workflow_id",
        "603 bytes",
    ),
    case(
        "set-workflow-id-empty",
        lambda w: within(SetWorkflowID(""), lambda: w.echo(1)),
        INVALID,
        "workflow_id",
    ),
    case(
        "set-workflow-id-int",
        lambda w: within(SetWorkflowID(5), lambda: w.echo(1)),
        WRONG_TYPE,
        "workflow_id",
    ),
    case(
        "timeout-inf",
        lambda w: within(SetWorkflowTimeout(math.inf), lambda: w.echo(1)),
        INVALID,
        "SetWorkflowTimeout",
    ),
    case(
        "timeout-1e300",
        lambda w: within(SetWorkflowTimeout(1e300), lambda: w.served.enqueue(w.echo, 1)),
        INVALID,
        "SetWorkflowTimeout",
    ),
    case(
        "timeout-nan",
        lambda w: within(SetWorkflowTimeout(math.nan), lambda: w.echo(1)),
        INVALID,
        "SetWorkflowTimeout",
        "NaN",
    ),
    case(
        "timeout-negative",
        lambda w: within(SetWorkflowTimeout(-1), lambda: w.echo(1)),
        INVALID,
        "SetWorkflowTimeout",
    ),
    case(
        "timeout-str",
        lambda w: within(SetWorkflowTimeout("10"), lambda: w.echo(1)),
        WRONG_TYPE,
        "SetWorkflowTimeout",
    ),
    case(
        "partition-key-nul",
        lambda w: within(
            SetEnqueueOptions(queue_partition_key=NUL), lambda: w.partitioned.enqueue(w.echo, 1)
        ),
        INVALID,
        "queue_partition_key",
        "NUL",
    ),
    case(
        "partition-key-huge",
        lambda w: within(
            SetEnqueueOptions(queue_partition_key=HUGE), lambda: w.partitioned.enqueue(w.echo, 1)
        ),
        INVALID,
        "queue_partition_key",
    ),
    case(
        "partition-key-int",
        lambda w: within(
            SetEnqueueOptions(queue_partition_key=1), lambda: w.partitioned.enqueue(w.echo, 1)
        ),
        WRONG_TYPE,
        "queue_partition_key",
    ),
    case(
        "dedup-id-surrogate",
        lambda w: within(
            SetEnqueueOptions(deduplication_id=SURROGATE), lambda: w.served.enqueue(w.echo, 1)
        ),
        INVALID,
        "deduplication_id",
    ),
    case(
        "dedup-id-huge",
        lambda w: within(
            SetEnqueueOptions(deduplication_id=HUGE), lambda: w.served.enqueue(w.echo, 1)
        ),
        INVALID,
        "deduplication_id",
    ),
    case(
        "enqueue-priority-zero",
        lambda w: within(SetEnqueueOptions(priority=0), lambda: w.served.enqueue(w.echo, 1)),
        INVALID,
        "priority",
    ),
    case(
        "enqueue-priority-bool",
        lambda w: within(SetEnqueueOptions(priority=True), lambda: w.served.enqueue(w.echo, 1)),
        WRONG_TYPE,
        "priority",
    ),
    case(
        "enqueue-delay-nan",
        lambda w: within(
            SetEnqueueOptions(delay_seconds=math.nan), lambda: w.served.enqueue(w.echo, 1)
        ),
        INVALID,
        "delay_seconds",
    ),
    case(
        "enqueue-delay-1e300",
        lambda w: within(
            SetEnqueueOptions(delay_seconds=1e300), lambda: w.served.enqueue(w.echo, 1)
        ),
        INVALID,
        "delay_seconds",
    ),
    case(
        "enqueue-reserved-queue",
        lambda w: w.dbos.enqueue_workflow("_dbos_mine", w.echo, 1),
        INVALID,
        "reserved",
    ),
    case(
        "enqueue-partitioned-without-key",
        lambda w: w.partitioned.enqueue(w.echo, 1),
        INVALID,
        "queue_partition_key",
    ),
    case(
        "enqueue-key-on-unpartitioned",
        lambda w: within(
            SetEnqueueOptions(queue_partition_key="k"), lambda: w.served.enqueue(w.echo, 1)
        ),
        INVALID,
        "queue_partition_key",
    ),
    case(
        "enqueue-duplication-policy-bogus",
        lambda w: within(
            SetEnqueueOptions(duplication_policy="bogus"), lambda: w.served.enqueue(w.echo, 1)
        ),
        INVALID,
        "duplication_policy",
    ),
    case(
        "enqueue-dedup-with-partition-key",
        lambda w: within(
            SetEnqueueOptions(deduplication_id="d", queue_partition_key="k"),
            lambda: w.partitioned.enqueue(w.echo, 1),
        ),
        INVALID,
        "deduplication",
    ),
    case(
        "enqueue-app-version-nul",
        lambda w: within(SetEnqueueOptions(app_version=NUL), lambda: w.served.enqueue(w.echo, 1)),
        INVALID,
        "app_version",
    ),
]


@pytest.mark.parametrize(("call", "kind", "words"), DBOS_CASES)
async def test_a_bad_value_given_to_dbos_raises_before_anything_is_written(
    url: str, call: Call, kind: type[BaseException], words: tuple[str, ...]
) -> None:
    async with world(url) as w:
        await refused_without_writing(url, lambda: call(w), kind, *words)


CLIENT_CASES = [
    case("send-topic-int", lambda w: w.client.send(w.done, "m", topic=1), WRONG_TYPE, "topic"),
    case(
        "send-topic-nul", lambda w: w.client.send(w.done, "m", topic=NUL), INVALID, "topic", "NUL"
    ),
    case("send-topic-huge", lambda w: w.client.send(w.done, "m", topic=HUGE), INVALID, "topic"),
    case(
        "send-destination-surrogate",
        lambda w: w.client.send(SURROGATE, 1),
        INVALID,
        "destination_id",
    ),
    case(
        "send-idempotency-key-int",
        lambda w: w.client.send(w.done, "m", idempotency_key=1),
        WRONG_TYPE,
        "idempotency_key",
    ),
    case(
        "get-event-timeout-nan",
        lambda w: w.client.get_event(w.done, "ready", timeout_seconds=math.nan),
        INVALID,
        "timeout_seconds",
        "number of seconds",
    ),
    case("get-event-key-int", lambda w: w.client.get_event(w.done, 1), WRONG_TYPE, "key"),
    case("get-event-key-nul", lambda w: w.client.get_event(w.done, NUL), INVALID, "key"),
    case("read-stream-key-int", lambda w: w.client.read_stream(w.done, 1), WRONG_TYPE, "key"),
    case(
        "read-stream-offset-negative",
        lambda w: w.client.read_stream(w.done, "numbers", offset=-1),
        INVALID,
        "offset",
    ),
    case(
        "read-stream-timeout-nan",
        lambda w: w.client.read_stream(w.done, "numbers", timeout_seconds=math.nan),
        INVALID,
        "timeout_seconds",
    ),
    case("retrieve-nul", lambda w: w.client.retrieve_workflow(NUL), INVALID, "workflow_id"),
    case("status-huge", lambda w: w.client.get_workflow_status(HUGE), INVALID, "workflow_id"),
    case(
        "steps-limit-negative",
        lambda w: w.client.list_workflow_steps(w.done, limit=-1),
        INVALID,
        "limit",
    ),
    case("list-limit-negative", lambda w: w.client.list_workflows(limit=-1), INVALID, "limit"),
    case("list-offset-negative", lambda w: w.client.list_workflows(offset=-5), INVALID, "offset"),
    case(
        "list-start-time-yesterday",
        lambda w: w.client.list_workflows(start_time="yesterday"),
        INVALID,
        "start_time",
    ),
    case(
        "list-queued-status-bogus",
        lambda w: w.client.list_queued_workflows(status="BOGUS"),
        INVALID,
        "status",
    ),
    case(
        "cancel-workflows-a-string",
        lambda w: w.client.cancel_workflows("abc"),
        WRONG_TYPE,
        "workflow_ids",
        "list of str",
    ),
    case(
        "resume-workflows-a-string",
        lambda w: w.client.resume_workflows("abc"),
        WRONG_TYPE,
        "workflow_ids",
    ),
    case("cancel-nul", lambda w: w.client.cancel_workflow(NUL), INVALID, "workflow_id"),
    case(
        "resume-queue-empty",
        lambda w: w.client.resume_workflow(w.cancelled, queue_name=""),
        INVALID,
        "queue_name",
    ),
    case("delete-surrogate", lambda w: w.client.delete_workflow(SURROGATE), INVALID, "workflow_id"),
    case(
        "delay-nan",
        lambda w: w.client.set_workflow_delay("a", delay_seconds=math.nan),
        INVALID,
        "delay_seconds",
    ),
    case(
        "delay-until-negative",
        lambda w: w.client.set_workflow_delay("a", delay_until_epoch_ms=-1),
        INVALID,
        "delay_until_epoch_ms",
    ),
    case(
        "delay-until-float",
        lambda w: w.client.set_workflow_delay("a", delay_until_epoch_ms=1.5),
        WRONG_TYPE,
        "delay_until_epoch_ms",
    ),
    case(
        "fork-partition-key-nul",
        lambda w: w.client.fork_workflow(w.done, 1, queue_partition_key=NUL),
        INVALID,
        "queue_partition_key",
    ),
    case(
        "fork-timeout-inf",
        lambda w: w.client.fork_workflow(w.done, 1, timeout_seconds=math.inf),
        INVALID,
        "timeout_seconds",
    ),
    case(
        "fork-timeout-1e300",
        lambda w: w.client.fork_workflow(w.done, 1, timeout_seconds=1e300),
        INVALID,
        "timeout_seconds",
    ),
    # --- EnqueueOptions: refused when constructed, before the client sees them
    case(
        "options-workflow-id-nul",
        lambda w: w.client.enqueue(enqueue_options(workflow_id=NUL), 1),
        INVALID,
        "EnqueueOptions.workflow_id",
        "NUL",
    ),
    case(
        "options-workflow-id-surrogate",
        lambda w: w.client.enqueue(enqueue_options(workflow_id=SURROGATE), 1),
        INVALID,
        "EnqueueOptions.workflow_id",
    ),
    case(
        "options-queue-name-megabyte",
        lambda w: w.client.enqueue(enqueue_options(queue_name=MEGABYTE), 1),
        INVALID,
        "EnqueueOptions.queue_name",
    ),
    case(
        "options-queue-name-int",
        lambda w: w.client.enqueue(enqueue_options(queue_name=3), 1),
        WRONG_TYPE,
        "EnqueueOptions.queue_name",
    ),
    case(
        "options-workflow-name-nul",
        lambda w: w.client.enqueue(enqueue_options(workflow_name=NUL), 1),
        INVALID,
        "EnqueueOptions.workflow_name",
    ),
    case(
        "options-partition-key-huge",
        lambda w: w.client.enqueue(
            enqueue_options(queue_name=PARTITIONED, queue_partition_key=HUGE), 1
        ),
        INVALID,
        "EnqueueOptions.queue_partition_key",
    ),
    case(
        "options-dedup-id-nul",
        lambda w: w.client.enqueue(enqueue_options(deduplication_id=NUL), 1),
        INVALID,
        "EnqueueOptions.deduplication_id",
    ),
    case(
        "options-app-version-surrogate",
        lambda w: w.client.enqueue(enqueue_options(app_version=SURROGATE), 1),
        INVALID,
        "EnqueueOptions.app_version",
    ),
    case(
        "options-application-name-nul",
        lambda w: w.client.enqueue(enqueue_options(application_name=NUL), 1),
        INVALID,
        "EnqueueOptions.application_name",
    ),
    case(
        "options-class-name-huge",
        lambda w: w.client.enqueue(enqueue_options(class_name=HUGE), 1),
        INVALID,
        "EnqueueOptions.class_name",
    ),
    case(
        "options-class-name-256-chars",
        lambda w: w.client.enqueue(enqueue_options(class_name="c" * 256), 1),
        INVALID,
        "EnqueueOptions.class_name",
        "256 characters",
    ),
    case(
        "options-instance-name-600-ascii",
        lambda w: w.client.enqueue(enqueue_options(instance_name="i" * 600), 1),
        INVALID,
        "EnqueueOptions.instance_name",
        "600 characters",
    ),
    case(
        "options-timeout-inf",
        lambda w: w.client.enqueue(enqueue_options(workflow_timeout=math.inf), 1),
        INVALID,
        "EnqueueOptions.workflow_timeout",
    ),
    case(
        "options-timeout-1e300",
        lambda w: w.client.enqueue(enqueue_options(workflow_timeout=1e300), 1),
        INVALID,
        "EnqueueOptions.workflow_timeout",
    ),
    case(
        "options-delay-nan",
        lambda w: w.client.enqueue(enqueue_options(delay_seconds=math.nan), 1),
        INVALID,
        "EnqueueOptions.delay_seconds",
    ),
    case(
        "options-roles-a-string",
        lambda w: w.client.enqueue(enqueue_options(authenticated_roles="admin"), 1),
        WRONG_TYPE,
        "authenticated_roles",
    ),
    case(
        "options-roles-nul",
        lambda w: w.client.enqueue(enqueue_options(authenticated_roles=["ok", NUL]), 1),
        INVALID,
        "authenticated_roles[1]",
    ),
    case(
        "options-priority-zero",
        lambda w: w.client.enqueue(enqueue_options(priority=0), 1),
        INVALID,
        "priority",
    ),
    case(
        "options-priority-str",
        lambda w: w.client.enqueue(enqueue_options(priority="1"), 1),
        WRONG_TYPE,
        "priority",
    ),
    case(
        "options-duplication-policy-bogus",
        lambda w: w.client.enqueue(enqueue_options(duplication_policy="bogus"), 1),
        INVALID,
        "duplication_policy",
    ),
    case(
        "options-return-existing-without-dedup-id",
        lambda w: w.client.enqueue(enqueue_options(duplication_policy="return-existing"), 1),
        INVALID,
        "deduplication_id",
    ),
    case(
        "options-serialization-bogus",
        lambda w: w.client.enqueue(enqueue_options(serialization="json"), 1),
        INVALID,
        "serialization",
    ),
    case(
        "options-timeout-zero",
        lambda w: w.client.enqueue(enqueue_options(workflow_timeout=0), 1),
        INVALID,
        "workflow_timeout",
    ),
    case(
        "options-authenticated-user-nul",
        lambda w: w.client.enqueue(enqueue_options(authenticated_user=NUL), 1),
        INVALID,
        "authenticated_user",
    ),
    case(
        "options-authenticated-user-int",
        lambda w: w.client.enqueue(enqueue_options(authenticated_user=1), 1),
        WRONG_TYPE,
        "authenticated_user",
    ),
    case(
        "enqueue-not-options",
        lambda w: w.client.enqueue({"workflow_name": "echo", "queue_name": SERVED}, 1),
        WRONG_TYPE,
        "EnqueueOptions",
    ),
    case(
        "delay-neither",
        lambda w: w.client.set_workflow_delay("a"),
        INVALID,
        "delay_seconds",
    ),
    case(
        "delay-both",
        lambda w: w.client.set_workflow_delay("a", delay_seconds=1, delay_until_epoch_ms=1),
        INVALID,
        "delay_until_epoch_ms",
    ),
    case(
        "client-app-name-nul",
        lambda w: Client(w.url, app_name=NUL),
        DBOSConfigError,
        "Client app_name",
    ),
]


@pytest.mark.parametrize(("call", "kind", "words"), CLIENT_CASES)
async def test_a_bad_value_given_to_the_client_raises_before_anything_is_written(
    url: str, call: Call, kind: type[BaseException], words: tuple[str, ...]
) -> None:
    async with world(url) as w:
        await refused_without_writing(url, lambda: call(w), kind, *words)


async def test_the_checksum_sees_each_accepted_call_of_the_same_kinds(url: str) -> None:
    # The counterpart of every "unchanged" above: the same calls with good values write,
    # and the checksum names the table they wrote.
    async with world(url) as w:
        accepted: list[tuple[Callable[[], Any], str]] = [
            (lambda: w.dbos.send(w.done, "m", topic="t"), "notifications"),
            (lambda: w.client.send(w.done, "m", topic="€" * 200), "notifications"),
            (lambda: within(SetWorkflowID("x" * 600), lambda: w.echo(1)), "workflow_status"),
            (lambda: w.dbos.delete_workflow("b"), "workflow_status"),
            (lambda: w.client.cancel_workflows(["a"]), "workflow_status"),
            (
                lambda: within(
                    SetEnqueueOptions(queue_partition_key="k" * 600),
                    lambda: w.partitioned.enqueue(w.echo, 1),
                ),
                "workflow_status",
            ),
        ]
        for index, (call, table) in enumerate(accepted):
            before = await table_checksums(url)
            await _outcome(call())
            after = await table_checksums(url)
            assert table in changed_tables(before, after), (index, table)


# ------------------------------------------------------------ write-then-raise, targets


async def test_send_with_an_int_topic_stores_no_message_so_a_retry_cannot_duplicate_it(
    url: str,
) -> None:
    async with world(url) as w:
        for send in (w.dbos.send, w.client.send):
            for _ in range(2):  # the "retry"
                await refused_without_writing(
                    url, lambda send=send: send(w.done, "m", topic=1), WRONG_TYPE, "topic"
                )
        assert await query(url, "SELECT count(*) FROM {t}notifications") == [(0,)]
        # The same call with a str topic stores exactly one message.
        await w.client.send(w.done, "m", topic="1")
        assert await query(url, "SELECT topic FROM {t}notifications") == [("1",)]


async def test_cancel_workflows_given_a_string_cancels_nothing(url: str) -> None:
    async with world(url) as w:
        for ids in ("abc", b"abc"):
            await refused_without_writing(
                url, lambda ids=ids: w.client.cancel_workflows(ids), WRONG_TYPE, "workflow_ids"
            )
        for parked in w.parked:
            assert (await status_row(url, parked))["status"] == "ENQUEUED"
        # A list of the same ids is what cancels them.
        await w.client.cancel_workflows(["a", "b", "c"])
        assert [(await status_row(url, p))["status"] for p in w.parked] == ["CANCELLED"] * 3


@pytest.mark.parametrize(
    "queue_name", ["", NUL, SURROGATE, MEGABYTE], ids=["empty", "nul", "surrogate", "megabyte"]
)
async def test_resume_onto_an_unusable_queue_leaves_the_workflow_as_it_was(
    url: str, queue_name: str
) -> None:
    async with world(url) as w:
        for resume in (w.dbos.resume_workflow, w.client.resume_workflow):
            await refused_without_writing(
                url,
                lambda resume=resume: resume(w.cancelled, queue_name=queue_name),
                INVALID,
                "queue_name",
            )
        assert (await status_row(url, w.cancelled))["status"] == "CANCELLED"
        # queue_name=None (the default) resumes it onto the internal queue, which is served.
        handle = await w.client.resume_workflow(w.cancelled)
        with trio.fail_after(30):
            assert await handle.get_result() == "cancelled"


@pytest.mark.parametrize("existing", ["done", "a"])
async def test_forking_to_an_id_that_exists_raises_id_in_use_and_writes_nothing(
    url: str, existing: str
) -> None:
    async with world(url) as w:
        for fork in (w.dbos.fork_workflow, w.client.fork_workflow):
            error = await refused_without_writing(
                url,
                lambda fork=fork: within(SetWorkflowID(existing), lambda: fork(w.done, 1)),
                DBOSWorkflowIDInUseError,
                f"Workflow ID {existing} is already in use",
            )
            assert isinstance(error, DBOSException)
            assert "duplicate key" not in str(error) and "UNIQUE" not in str(error)
        # A fresh id forks.
        with SetWorkflowID("forked"):
            handle = await w.client.fork_workflow(w.done, 1)
        with trio.fail_after(30):
            assert await handle.get_result() == "published"


async def test_a_nul_workflow_id_is_refused_on_both_backends_not_run_and_lost(url: str) -> None:
    # On SQLite a NUL id used to run, after which its handle said it did not exist.
    async with world(url) as w:
        for start in (
            lambda: w.echo(1),
            lambda: w.dbos.start_workflow(w.echo, 1),
            lambda: w.served.enqueue(w.echo, 1),
        ):
            await refused_without_writing(
                url, lambda start=start: within(SetWorkflowID("id\x00"), start), INVALID, "NUL"
            )
        assert await query(url, "SELECT count(*) FROM {t}workflow_status") == [(5,)]


# ---------------------------------------------------------------- before launch


def registrations() -> list[Any]:
    def queue(name: str, **limits: Any) -> Callable[[DBOS], Any]:
        return lambda dbos: dbos.register_queue(name, **limits)

    return [
        pytest.param(queue(NUL), INVALID, "queue name", id="queue-nul"),
        pytest.param(queue(SURROGATE), INVALID, "queue name", id="queue-surrogate"),
        pytest.param(queue(MEGABYTE), INVALID, "queue name", id="queue-megabyte"),
        pytest.param(queue(""), INVALID, "queue name", id="queue-empty"),
        pytest.param(queue(7), WRONG_TYPE, "queue name", id="queue-int"),
        pytest.param(
            queue("q", polling_interval_sec=math.nan),
            INVALID,
            "polling_interval_sec",
            id="queue-polling-nan",
        ),
        pytest.param(
            queue("q", limiter=RateLimit(5, math.inf)), INVALID, "limiter.period", id="limiter-inf"
        ),
        pytest.param(
            queue("q", limiter=RateLimit(5, math.nan)), INVALID, "limiter.period", id="limiter-nan"
        ),
        pytest.param(
            queue("q", worker_concurrency=-1), INVALID, "worker_concurrency", id="concurrency-neg"
        ),
        pytest.param(
            queue("q", global_concurrency=2**31),
            INVALID,
            "global_concurrency",
            id="concurrency-big",
        ),
        pytest.param(
            lambda dbos: dbos.step(interval_seconds="1"),
            WRONG_TYPE,
            "interval_seconds",
            id="step-interval-str",
        ),
        pytest.param(
            lambda dbos: dbos.step(interval_seconds=math.inf),
            INVALID,
            "interval_seconds",
            id="step-interval-inf",
        ),
        pytest.param(
            lambda dbos: dbos.step(max_attempts=0), INVALID, "max_attempts", id="step-attempts-0"
        ),
        pytest.param(
            lambda dbos: dbos.step(backoff_rate=math.nan),
            INVALID,
            "backoff_rate",
            id="step-backoff-nan",
        ),
        pytest.param(
            lambda dbos: dbos.step(timeout_seconds=0),
            INVALID,
            "timeout_seconds",
            id="step-timeout-0",
        ),
        pytest.param(
            lambda dbos: dbos.workflow(name=NUL), INVALID, "workflow name", id="workflow-name-nul"
        ),
        pytest.param(
            lambda dbos: dbos.workflow(max_recovery_attempts=0),
            INVALID,
            "max_recovery_attempts",
            id="workflow-recovery-attempts-0",
        ),
        pytest.param(queue("_dbos_mine"), INVALID, "reserved", id="queue-reserved"),
    ]


@pytest.mark.parametrize(("register", "kind", "word"), registrations())
async def test_a_bad_registration_fails_at_once_and_the_app_still_launches(
    url: str, register: Callable[[DBOS], Any], kind: type[BaseException], word: str
) -> None:
    dbos, workflows = make_app(url)
    with pytest.raises(BaseException) as raised:
        register(dbos)
    assert type(raised.value) is kind, repr(raised.value)
    assert word in str(raised.value)
    # Nothing of it reaches the database at launch: the declared queues, and no others.
    async with dbos.launched():
        assert await workflows["echo"](5) == 5
    names = await query(url, "SELECT name FROM {t}queues ORDER BY name")
    assert names == [(PARTITIONED,), (SERVED,)]


async def test_an_unstorable_identity_from_the_environment_fails_before_writing(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Config(...) checks app_version and executor_id it is given (tests/unit); the same
    # values may come from the environment instead (a lone surrogate is what an invalid
    # UTF-8 byte in an environment variable decodes to).
    monkeypatch.delenv("DBOS__APPVERSION", raising=False)
    monkeypatch.setenv("DBOS__VMID", "vm\udcff")
    before = await table_checksums(url)
    dbos = DBOS(Config(app_name=APP, database_url=url, app_version="v1"))
    with pytest.raises(DBOSException) as raised:
        async with dbos.launched():
            pass  # pragma: no cover
    await assert_unchanged(url, before, "a launch with an unstorable executor id")
    assert type(raised.value) is DBOSConfigError, repr(raised.value)
    assert "DBOS__VMID" in str(raised.value), str(raised.value)


# ---------------------------------------------------------------- inside a workflow


async def _send_nul_topic(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.send(target, "m", topic="t\x00")


async def _send_int_topic(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.send(target, "m", topic=1)  # type: ignore[arg-type]


async def _send_nul_destination(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.send(target + "\x00", "m")


async def _set_event_huge_key(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.set_event("k" * 10_000, 1)


async def _set_event_nul_key(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.set_event("k\x00", 1)


async def _write_stream_int_key(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.write_stream(1, "v")  # type: ignore[arg-type]


async def _recv_surrogate_topic(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.recv("t\ud800", timeout_seconds=1)


async def _get_event_nul_key(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.get_event(target, "k\x00", timeout_seconds=1)


async def _sleep_nan(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.sleep(math.nan)


async def _enqueue_huge_queue(dbos: DBOS, echo: Workflow, target: str) -> None:
    await dbos.enqueue_workflow("q" * 10_000, echo, target)


BODY_ACTIONS: dict[str, Callable[[DBOS, Workflow, str], Any]] = {
    "send-nul-topic": _send_nul_topic,
    "send-int-topic": _send_int_topic,
    "send-nul-destination": _send_nul_destination,
    "set-event-huge-key": _set_event_huge_key,
    "set-event-nul-key": _set_event_nul_key,
    "write-stream-int-key": _write_stream_int_key,
    "recv-surrogate-topic": _recv_surrogate_topic,
    "get-event-nul-key": _get_event_nul_key,
    "sleep-nan": _sleep_nan,
    "enqueue-huge-queue": _enqueue_huge_queue,
}

BODY_CASES = [
    ("send-nul-topic", INVALID, "topic must not contain a NUL"),
    ("send-int-topic", WRONG_TYPE, "topic must be a str"),
    ("send-nul-destination", INVALID, "destination_id must not contain a NUL"),
    ("set-event-huge-key", INVALID, "key is 10000 bytes"),
    ("set-event-nul-key", INVALID, "key must not contain a NUL"),
    ("write-stream-int-key", WRONG_TYPE, "key must be a str"),
    ("recv-surrogate-topic", INVALID, "topic must not contain a lone surrogate"),
    ("get-event-nul-key", INVALID, "key must not contain a NUL"),
    ("sleep-nan", INVALID, "seconds needs a number of seconds, not nan"),
    ("enqueue-huge-queue", INVALID, "queue_name is 10000 bytes"),
]


@pytest.mark.parametrize(
    ("action", "kind", "words"), [pytest.param(*c, id=c[0]) for c in BODY_CASES]
)
async def test_a_bad_value_in_a_workflow_body_ends_it_as_error_with_that_error(
    url: str, action: str, kind: type[DBOSException], words: str
) -> None:
    dbos, workflows = make_app(url)
    async with dbos.launched():
        with SetWorkflowID(f"body-{action}"):
            handle = await dbos.start_workflow(workflows["misbehave"], action, "done-target")
        with trio.fail_after(30), pytest.raises(DBOSException) as raised:
            await handle.get_result()
        assert type(raised.value) is kind, repr(raised.value)
        assert words in raised.value.message
        status = await handle.get_status()
    assert status.status == "ERROR"
    row = await status_row(url, f"body-{action}")
    assert row["status"] == "ERROR"
    # The bad call wrote nothing of its own: no message, event, stream value or child,
    # and no checkpoint (its step id was never taken).
    for table in ("notifications", "workflow_events", "streams"):
        assert await query(url, "SELECT count(*) FROM {t}" + table) == [(0,)], table
    assert await query(
        url, "SELECT count(*) FROM {t}operation_outputs WHERE workflow_uuid = %s", f"body-{action}"
    ) == [(0,)]
    assert await query(url, "SELECT count(*) FROM {t}workflow_status") == [(1,)]
    # A later launch does not run it again: it is over.
    dbos_again, _ = make_app(url)
    async with dbos_again.launched():
        again = await dbos_again.retrieve_workflow(f"body-{action}")
        with pytest.raises(DBOSException) as replayed:
            await again.get_result()
        assert type(replayed.value) is kind
        assert (await again.get_status()).status == "ERROR"


async def test_a_portable_value_with_a_lone_surrogate_round_trips_instead_of_hanging(
    url: str,
) -> None:
    # Found by the property suite: portable JSON handed the database text with a lone
    # surrogate, which neither backend can store; the workflow's output write failed with
    # a raw encoding error and the row stayed PENDING. Now it is escaped (\uXXXX) and
    # comes back as the same string.
    dbos, _ = make_app(url)
    odd = "x\ud800y\udfff"

    @dbos.workflow(name="portable_odd", serialization="portable")
    async def portable_odd(value: str) -> dict[str, str]:
        await dbos.set_event("odd", value)
        return {value: value}

    async with dbos.launched(), Client(url, outcome_poll_interval=0.1) as client:
        with SetWorkflowID("odd"), trio.fail_after(30):
            assert await portable_odd(odd) == {odd: odd}
        assert (await status_row(url, "odd"))["status"] == "SUCCESS"
        assert await dbos.get_event("odd", "odd", timeout_seconds=0) == odd
        assert await client.get_event("odd", "odd", timeout_seconds=0) == odd
        handle = await client.retrieve_workflow("odd")
        assert await handle.get_result() == {odd: odd}


async def test_class_and_instance_names_have_the_same_limit_on_both_backends(url: str) -> None:
    # class_name and config_name are VARCHAR(255): 256-600 ASCII characters passed the byte
    # limit, then PostgreSQL refused them raw while SQLite stored them.
    dbos, _ = make_app(url)

    class Named(DBOSConfiguredInstance):
        @dbos.workflow(name="named.run")
        async def run(self) -> str:
            return self.config_name

    before = await table_checksums(url)
    with pytest.raises(DBOSInvalidArgumentError, match="config_name is 256 characters"):
        Named("n" * 256)
    await assert_unchanged(url, before, "a refused instance name")
    named = Named("n" * 255)
    async with dbos.launched(), Client(url, outcome_poll_interval=0.1) as client:
        with SetWorkflowID("named"):
            assert await named.run() == "n" * 255
        handle = await client.enqueue(
            enqueue_options(
                workflow_name="named.run",
                queue_name=SERVED,
                class_name="c" * 255,
                instance_name="i" * 255,
                workflow_id="named-by-client",
            )
        )
        assert handle.workflow_id == "named-by-client"
    row = await status_row(url, "named-by-client")
    assert (row["class_name"], row["config_name"]) == ("c" * 255, "i" * 255)
