"""Retention every face shares: garbage collection and the global timeout.

Both act on the runtime's application's rows and unclaimed ones (every row of the schema
for a client of no application). Neither is checkpointed, from any face: neither has a
cross-SDK step name (the official SDK dropped both in 3.x), garbage collection deletes
only rows no workflow reads again, and cancelling what was created before a fixed time
twice cancels the same rows. Arguments are checked at the call, before anything is
deleted.
"""

from __future__ import annotations

from collections.abc import Coroutine
from datetime import datetime
from typing import Any

from dbos_trio._core.filters import epoch_ms
from dbos_trio._core.retention import (
    DEFAULT_BATCH_SIZE,
    check_batch_size,
    check_jobs,
    check_keep_newest,
)
from dbos_trio._engine.admin import payloads, retention
from dbos_trio._engine.admin.payloads import DEFAULT_PAYLOAD_GRACE_SECONDS, PayloadCollection
from dbos_trio._engine.admin.retention import GarbageCollection, Progress
from dbos_trio._ops.reach import Reach
from dbos_trio.errors import DBOSConfigError, DBOSInvalidArgumentError

__all__ = [
    "DEFAULT_PAYLOAD_GRACE_SECONDS",
    "GarbageCollection",
    "PayloadCollection",
    "Progress",
    "cancel_workflows_created_before",
    "collect_payloads",
    "garbage_collect",
]


def garbage_collect(
    reach: Reach,
    *,
    completed_before: int | datetime | str | None = None,
    keep_newest: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
    jobs: int = 1,
) -> Coroutine[Any, Any, GarbageCollection]:
    """Delete the finished workflows (SUCCESS, ERROR, CANCELLED,
    MAX_RECOVERY_ATTEMPTS_EXCEEDED) that finished before ``completed_before`` or are older
    than the ``keep_newest`` newest, in batches of ``batch_size`` (one transaction each,
    ``progress(deleted)`` after each, ``jobs`` at a time). Cancellation stops between
    batches: what was deleted stays deleted. A bad value raises
    :class:`~dbos_trio.DBOSInvalidArgumentError` at the call."""
    cutoff = None if completed_before is None else epoch_ms(completed_before, "completed_before")
    check_keep_newest(keep_newest, "keep_newest")
    check_batch_size(batch_size, "batch_size")
    check_jobs(jobs, "jobs")
    runtime = reach.runtime("garbage_collect")
    return retention.garbage_collect(
        runtime,
        completed_before_ms=cutoff,
        keep_newest=keep_newest,
        application_name=runtime.app_name,
        batch_size=batch_size,
        progress=progress,
        jobs=jobs,
    )


def cancel_workflows_created_before(
    reach: Reach, created_before: int | datetime | str
) -> Coroutine[Any, Any, list[str]]:
    """Cancel every PENDING, ENQUEUED or DELAYED workflow created before
    ``created_before`` (the official 2.x ``global_timeout``), in batches; the ids
    cancelled. Cancellation stops between batches (those cancelled stay cancelled)."""
    cutoff = epoch_ms(created_before, "created_before")
    runtime = reach.runtime("cancel_workflows_created_before")
    return retention.cancel_created_before(runtime, cutoff, application_name=runtime.app_name)


def collect_payloads(
    reach: Reach, *, grace_seconds: float = DEFAULT_PAYLOAD_GRACE_SECONDS
) -> Coroutine[Any, Any, PayloadCollection]:
    """Remove the payload store's entries that no row of the schema references and that
    were not written or used for ``grace_seconds`` (mark and sweep:
    :mod:`dbos_trio._engine.admin.payloads`). Raises :class:`~dbos_trio.DBOSConfigError`
    at the call without a configured payload store, and
    :class:`~dbos_trio.DBOSInvalidArgumentError` for a negative or infinite grace.
    Cancellation stops it; what was removed stays removed."""
    if (
        isinstance(grace_seconds, bool)
        or not isinstance(grace_seconds, int | float)
        or not 0 <= grace_seconds < float("inf")
    ):
        raise DBOSInvalidArgumentError(
            f"grace_seconds: {grace_seconds!r} must be a finite number of seconds, 0 or more"
        )
    runtime = reach.runtime("collect_payloads")
    store = runtime.codec.payload_store
    if store is None:
        raise DBOSConfigError(
            "collect_payloads: no payload store is configured (Config.payload_store, "
            "Client payload_store, or the CLI's --payload-store)"
        )
    return payloads.collect_payloads(runtime, store, grace_seconds=grace_seconds)
