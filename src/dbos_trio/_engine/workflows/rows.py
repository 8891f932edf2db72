"""The one way a new workflow row is made: by a direct start, an enqueue, or a client.

Invariant: the same request makes the same row whoever makes it. A direct start's row is
PENDING, owned by the starter's token (which is also its creator token) and counts its
first attempt; a queued row is ENQUEUED — or DELAYED, with any delay, even 0, as dbos 3.4
does — unowned, with a fresh creator token (so a retried insert recognizes the row it
already committed) and no attempt counted until a claim. Durations become milliseconds
one way (:mod:`dbos_trio._core.units`).
"""

from __future__ import annotations

from typing import Protocol

import attrs

from dbos_trio._core.ids import random_uuid
from dbos_trio._core.statuses import DELAYED, ENQUEUED, PENDING
from dbos_trio._core.units import seconds_to_ms
from dbos_trio._sysdb.records import NewWorkflow


@attrs.frozen(kw_only=True)
class Placement:
    """Where a queued row waits, and how it is ordered there."""

    queue_name: str
    deduplication_id: str | None = None
    priority: int | None = None
    partition_key: str | None = None
    delay_seconds: float | None = None


class QueuedOptions(Protocol):
    """What an enqueue's options say about where its row waits (both the engine's
    ``EnqueueOptions`` and the client's have these fields)."""

    @property
    def deduplication_id(self) -> str | None: ...
    @property
    def priority(self) -> int | None: ...
    @property
    def queue_partition_key(self) -> str | None: ...
    @property
    def delay_seconds(self) -> float | None: ...


def placement_for(queue_name: str, options: QueuedOptions) -> Placement:
    """Where an enqueue with ``options`` puts its row on ``queue_name``."""
    return Placement(
        queue_name=queue_name,
        deduplication_id=options.deduplication_id,
        priority=options.priority,
        partition_key=options.queue_partition_key,
        delay_seconds=options.delay_seconds,
    )


@attrs.frozen(kw_only=True)
class Writer:
    """Who writes the row: stamped on it (an executor's identity, or a client's nothing)."""

    executor_id: str | None
    application_version: str | None
    application_id: str | None
    application_name: str | None


def new_row(
    *,
    workflow_id: str,
    name: str,
    class_name: str | None,
    config_name: str | None,
    inputs: str,
    serialization: str,
    now_ms: int,
    writer: Writer,
    owner_xid: str | None = None,
    placement: Placement | None = None,
    timeout_ms: int | None = None,
    deadline_epoch_ms: int | None = None,
    parent_workflow_id: str | None = None,
    authenticated_user: str | None = None,
    authenticated_roles: str | None = None,
    schedule_name: str | None = None,
    attributes: str | None = None,
) -> NewWorkflow:
    """A direct start's row (``owner_xid`` given, no placement) or a queued one."""
    if placement is None:
        if owner_xid is None:
            raise ValueError("a directly started row needs its owner's token")
        status, creator_xid, attempts = PENDING, owner_xid, 1
        delay_until = None
    else:
        delayed = placement.delay_seconds is not None
        status, creator_xid, attempts = DELAYED if delayed else ENQUEUED, random_uuid(), 0
        delay_until = (
            now_ms + seconds_to_ms(placement.delay_seconds)
            if placement.delay_seconds is not None
            else None
        )
    return NewWorkflow(
        workflow_id=workflow_id,
        status=status,
        name=name,
        class_name=class_name,
        config_name=config_name,
        inputs=inputs,
        serialization=serialization,
        creator_xid=creator_xid,
        owner_xid=owner_xid if placement is None else None,
        recovery_attempts=attempts,
        created_at_ms=now_ms,
        executor_id=writer.executor_id,
        application_version=writer.application_version,
        application_id=writer.application_id,
        application_name=writer.application_name,
        queue_name=None if placement is None else placement.queue_name,
        deduplication_id=None if placement is None else placement.deduplication_id,
        priority=0 if placement is None else placement.priority or 0,
        queue_partition_key=None if placement is None else placement.partition_key,
        timeout_ms=timeout_ms,
        deadline_epoch_ms=deadline_epoch_ms,
        delay_until_epoch_ms=delay_until,
        parent_workflow_id=parent_workflow_id,
        authenticated_user=authenticated_user,
        authenticated_roles=authenticated_roles,
        schedule_name=schedule_name,
        attributes=attributes,
    )
