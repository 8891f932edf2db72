"""Streams: a workflow appends values under a key; readers consume them in order.

Offsets start at 0 and have no gaps; closing appends the portable-JSON sentinel
``"__DBOS_STREAM_CLOSED__"``. A writer in a workflow body records ``DBOS.writeStream`` /
``DBOS.closeStream`` in the same fenced statement as the append; from a step the append
is fenced but not recorded.

A reader stops at the sentinel, or once the writer is no longer active and every value
is read (the writer's status comes back with each batch, in the same snapshot, so nothing
written before it finished is missed). Reading a missing workflow's stream raises
:class:`DBOSNonExistentWorkflowError`. Read from a workflow body, each delivered value —
and the end — is a ``DBOS.readStream`` checkpoint, so a replay yields the same values;
so is a wait that timed out (the :class:`~dbos_trio.DBOSStreamTimeoutError` recorded as
the step's error, in the application's serializer, as dbos 3.4.0 records it), so a replay
raises it again at once instead of waiting out the timeout a second time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any

from dbos_trio._core import validate
from dbos_trio._engine.durable.events import writer_slot
from dbos_trio._engine.durable.messages import stored_payload
from dbos_trio._engine.durable.waits import Payload, next_stream_values
from dbos_trio._engine.workflows import checkpoint
from dbos_trio._engine.workflows.checkpoint import record_error, record_payload
from dbos_trio._serialization import PORTABLE_JSON
from dbos_trio._sysdb.records import STREAM_CLOSED
from dbos_trio._sysdb.wakeups import stream_key
from dbos_trio.errors import DBOSStreamTimeoutError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

WRITE_STREAM = "DBOS.writeStream"
CLOSE_STREAM = "DBOS.closeStream"
READ_STREAM = "DBOS.readStream"
CLOSED_MARKER = json.dumps(STREAM_CLOSED)
_END: Payload = (CLOSED_MARKER, PORTABLE_JSON)  # how a stream's end is stored


def _append(
    value: Any, key: str, *, step_name: str, closing: bool, fmt: str | None = None
) -> Coroutine[Any, Any, None]:
    validate.text(key, "key")
    slot, ctx, caller = writer_slot(step_name, step_name)
    chosen = fmt

    async def append() -> None:
        executor = ctx.executor
        fmt = PORTABLE_JSON if closing else chosen or ctx.serialization
        encoded = (
            CLOSED_MARKER
            if closing
            else await stored_payload(executor, value, fmt, f"value written to stream {key!r}")
        )
        await executor.sysdb.write_stream(
            caller(), key, encoded, fmt, executor.clock.now_ms(), step_name=step_name
        )

    return checkpoint.checkpointed(slot, append, records_itself=True, record_errors=False)


def write_stream(key: str, value: Any, fmt: str | None = None) -> Coroutine[Any, Any, None]:
    """Append ``value`` (stored in ``fmt``, default the workflow's format); from a body the
    ``DBOS.writeStream`` step id is taken now."""
    return _append(value, key, step_name=WRITE_STREAM, closing=False, fmt=fmt)


def close_stream(key: str) -> Coroutine[Any, Any, None]:
    """Append the close marker; from a body the ``DBOS.closeStream`` step id is taken now."""
    return _append(None, key, step_name=CLOSE_STREAM, closing=True)


def is_end(value: str | None, fmt: str | None) -> bool:
    """Whether a stream value is the close marker."""
    return fmt == PORTABLE_JSON and value == CLOSED_MARKER


async def read_stream(
    executor: Executor,
    workflow_id: str,
    key: str,
    offset: int = 0,
    timeout_seconds: float | None = None,
    poll_interval: float | None = None,
) -> AsyncIterator[Any]:
    """Yield the stream's values in order until it is closed, or drained after its writer
    ended; waiting longer than ``timeout_seconds`` for one value raises
    :class:`~dbos_trio.DBOSStreamTimeoutError` (from a workflow body, recorded as that
    value's checkpoint: a replay raises it again without waiting). The
    stream is re-read every ``poll_interval`` seconds (default: the backend's re-check
    interval) while it waits, and at once on a notification."""
    validate.text(workflow_id, "workflow_id")
    validate.text(key, "key")
    validate.integer(offset, "offset", low=0)
    validate.optional_seconds(timeout_seconds, "timeout_seconds")
    codec = executor.codec
    buffered: list[Payload] = []
    with executor.wakeups.subscribe(stream_key(workflow_id, key)) as wakeup:
        while True:
            slot = checkpoint.reserve(READ_STREAM)
            if slot is not None:
                await slot.placed()
                recorded = slot.recorded()
                if recorded is not None:
                    if is_end(recorded.output, recorded.serialization):
                        return
                    offset += 1
                    yield await checkpoint.replayed_value(executor, recorded)
                    continue
            started = executor.clock.now_ms()
            if not buffered:
                try:
                    buffered = await next_stream_values(
                        executor,
                        wakeup,
                        workflow_id,
                        key,
                        offset,
                        timeout_seconds=timeout_seconds,
                        poll_interval=poll_interval,
                    )
                except DBOSStreamTimeoutError as timed_out:
                    if slot is not None:
                        await record_error(slot, timed_out, started_at_ms=started)
                    raise
                if not buffered:
                    buffered = [_END]  # drained after the writer ended
            value, fmt = buffered.pop(0)
            if slot is not None:
                await record_payload(slot, (value, fmt), started_at_ms=started)
            if is_end(value, fmt):
                return
            offset += 1
            await codec.prefetch(value)
            yield codec.decode(value, fmt)
