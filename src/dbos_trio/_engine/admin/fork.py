"""Forking: a new workflow that replays another's first steps and re-runs the rest.

The fork copies the original's inputs and every checkpoint, event and stream value written
before ``start_step`` (messages are not copied), and is enqueued on the internal queue (or
the given one) with no application version unless one is given, so the latest version
runs it. Its id comes from ``SetWorkflowID`` or is fresh.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from dbos_trio._core import validate
from dbos_trio._core.ids import random_uuid
from dbos_trio._core.units import seconds_to_ms
from dbos_trio._engine.workflows.options import take_assigned_id, timeout_option
from dbos_trio._sysdb.records import INTERNAL_QUEUE
from dbos_trio._sysdb.wakeups import queue_key
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException, DBOSNonExistentWorkflowError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime


async def fork_workflow(
    executor: Runtime,
    original_id: str,
    start_step: int,
    *,
    application_version: str | None = None,
    queue_name: str | None = None,
    queue_partition_key: str | None = None,
    replacement_children: Mapping[str, str] | None = None,
    forked_id: str | None = None,
    timeout_seconds: float | None = None,
) -> str:
    if isinstance(start_step, bool) or not isinstance(start_step, int) or start_step < 1:
        raise DBOSException(f"start_step must be a positive step id, not {start_step!r}")
    # The id given (taken from SetWorkflowID at the call), else SetWorkflowID's now.
    forked_id = forked_id or take_assigned_id() or random_uuid()
    timeout = timeout_seconds if timeout_seconds is not None else timeout_option()
    queue = queue_name or INTERNAL_QUEUE
    created = await executor.sysdb.fork_workflow(
        original_id=original_id,
        forked_id=forked_id,
        start_step=start_step,
        application_version=application_version,
        queue_name=queue,
        queue_partition_key=queue_partition_key,
        timeout_ms=seconds_to_ms(timeout) if timeout else None,
        application_name=executor.app_name,
        now_ms=executor.clock.now_ms(),
        replacement_children=None
        if not replacement_children
        else json.dumps(dict(replacement_children)),
    )
    if not created:
        raise DBOSNonExistentWorkflowError("fork", original_id)
    executor.wakeups.wake(queue_key(queue))
    return forked_id


def check_replacement_children(value: object) -> dict[str, str] | None:
    """``replacement_children`` as a dict of child id → replacement id, or a clear error."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise DBOSArgumentTypeError(
            "replacement_children must be a dict of child workflow id to replacement id, "
            f"not {type(value).__name__}"
        )
    return {
        validate.text(key, "replacement_children key"): validate.text(
            replacement, "replacement_children value"
        )
        for key, replacement in value.items()
    }
