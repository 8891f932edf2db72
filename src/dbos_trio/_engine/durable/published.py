"""Reading a workflow's published state in one go: all its events, one stream value.

``get_all_events`` answers with every event at its latest value; ``read_stream_offset``
with exactly the value at one offset, waiting for it (woken by the stream's wakeup, and
re-checking on the bounded interval), and raising :class:`DBOSStreamTimeoutError` when
the stream ends before that offset or the wait exceeds its timeout. Called from a
workflow body each is a checkpoint (``DBOS.get_events``, ``DBOS.readStreamOffset``, the
names dbos 3.4 records) so a replay answers the same.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from dbos_trio._core import validate
from dbos_trio._engine.durable.streams import is_end
from dbos_trio._engine.durable.waits import next_stream_values
from dbos_trio._engine.workflows.checkpoint import as_step
from dbos_trio._sysdb.wakeups import stream_key
from dbos_trio.errors import DBOSStreamTimeoutError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime

GET_EVENTS = "DBOS.get_events"
READ_STREAM_OFFSET = "DBOS.readStreamOffset"


async def all_events(runtime: Runtime, workflow_id: str) -> dict[str, Any]:
    """Every event of the workflow at its latest value (``{}`` if it has none)."""
    found = await runtime.sysdb.get_all_events(workflow_id)
    await runtime.codec.prefetch(*(value for _, value, _ in found))
    return {key: runtime.codec.decode(value, fmt) for key, value, fmt in found}


def get_all_events(runtime: Runtime, workflow_id: str) -> Coroutine[Any, Any, dict[str, Any]]:
    validate.text(workflow_id, "workflow_id")

    async def read() -> dict[str, Any]:
        return await all_events(runtime, workflow_id)

    return as_step(GET_EVENTS, read)


async def stream_value_at(
    runtime: Runtime, workflow_id: str, key: str, offset: int, timeout_seconds: float | None
) -> Any:
    """The value at ``offset``, waiting for it; see the module docs for the errors."""
    with runtime.wakeups.subscribe(stream_key(workflow_id, key)) as wakeup:
        values = await next_stream_values(
            runtime, wakeup, workflow_id, key, offset, timeout_seconds=timeout_seconds
        )
    if not values or is_end(*values[0]):
        raise DBOSStreamTimeoutError(workflow_id, key, timeout_seconds)
    value, fmt = values[0]
    await runtime.codec.prefetch(value)
    return runtime.codec.decode(value, fmt)


def read_stream_offset(
    runtime: Runtime,
    workflow_id: str,
    key: str,
    offset: int,
    timeout_seconds: float | None = None,
) -> Coroutine[Any, Any, Any]:
    validate.text(workflow_id, "workflow_id")
    validate.text(key, "key")
    validate.integer(offset, "offset", low=0)
    validate.optional_seconds(timeout_seconds, "timeout_seconds")

    async def read() -> Any:
        return await stream_value_at(runtime, workflow_id, key, offset, timeout_seconds)

    return as_step(READ_STREAM_OFFSET, read)
