"""Retention: garbage collection in batches, the retention policy, and the global timeout.

Invariants, and why:

* Only terminal workflows are deleted (see :mod:`dbos_trio._core.retention`); PENDING,
  ENQUEUED and DELAYED rows are never touched, however old.
* A collection is a series of short batches (one transaction each) walked through the
  ``created_at`` index from a watermark, so running workflows are not blocked: between
  two batches any claim or checkpoint goes through, and a row locked by someone else is
  skipped rather than waited for (it is collected by the next run). Cancellation stops
  the collection between batches or rolls the current batch back whole; what was
  deleted stays deleted, and a second run continues where it left off.
* The policy (``Config(retention=...)``) runs in every executor, but one executor per
  application collects at a time: each batch takes the application's retention lock in
  its transaction, and a run that cannot stops (the holder is already collecting).
  Its times come from the executor's clock, so a ``MockClock`` drives it.
* Nothing here is checkpointed: a collection deletes only rows no workflow will read
  again, so running it twice is the same as running it once.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import trio

from dbos_trio._core.ending import collapse
from dbos_trio._core.retention import (
    DEFAULT_BATCH_SIZE,
    EVERYTHING,
    RetentionPolicy,
    bounds,
    check_batch_size,
    check_jobs,
    check_keep_newest,
)
from dbos_trio._engine.admin.payloads import collect_payloads

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, Runtime

logger = logging.getLogger("dbos_trio.retention")

CANCEL_BATCH = 1000
"""Rows one global-timeout statement cancels."""


@attrs.frozen
class GarbageCollection:
    """What one collection did: ``deleted`` workflows, in ``batches`` transactions;
    ``stopped_early`` when another executor held the retention lock (policy runs only)."""

    deleted: int
    batches: int
    stopped_early: bool = False


Progress = Callable[[int], None]
"""Called after each batch with the number of workflows deleted so far."""


async def garbage_collect(
    runtime: Runtime,
    *,
    completed_before_ms: int | None,
    keep_newest: int | None,
    application_name: str | None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
    leader_only: bool = False,
    jobs: int = 1,
) -> GarbageCollection:
    """Delete the terminal workflows the bounds doom (see :mod:`dbos_trio._core.retention`).

    With neither bound nothing is deleted. ``jobs`` walks run at once (PostgreSQL: more
    rows/s on a server with idle cores, at some cost to the latency of running work;
    SQLite has one writer, so more than one only takes turns). Errors: a database failure raises
    :class:`~dbos_trio.SystemDatabaseError` after the backend's retries; the batches
    committed before it stay committed. Cancellation stops between batches.
    """
    check_keep_newest(keep_newest, "keep_newest")
    check_batch_size(batch_size, "batch_size")
    check_jobs(jobs, "jobs")
    nth = None
    if keep_newest == 0:
        nth = EVERYTHING  # keep none: every terminal row is doomed
    elif keep_newest is not None:
        nth = await runtime.sysdb.gc_nth_newest(application_name, keep_newest - 1)
    limits = bounds(completed_before_ms, nth)
    if limits.empty:
        return GarbageCollection(0, 0)
    done = _Tally()

    async def walk() -> None:
        after = 0
        while not done.stopped_early:
            created = await runtime.sysdb.gc_batch(
                application_name=application_name,
                after_ms=after,
                created_before_ms=limits.created_before_ms,
                keep_before_ms=limits.keep_before_ms,
                completed_before_ms=limits.completed_before_ms,
                batch_size=batch_size,
                leader_only=leader_only,
            )
            if created is None:
                done.stopped_early = True
                return
            done.batches += 1
            done.deleted += len(created)
            if progress is not None:
                progress(done.deleted)
            if len(created) < batch_size:
                return
            # Ties at the watermark are looked at again: those deleted are gone, so a row
            # sharing the last created_at is never skipped.
            after = max(created)

    if jobs == 1:
        await walk()
    else:
        # Concurrent walks share the work through SKIP LOCKED: each batch takes the
        # oldest rows no other batch holds. A failure of one cancels the others.
        try:
            async with trio.open_nursery() as nursery:
                for _ in range(jobs):
                    nursery.start_soon(walk)
        except BaseExceptionGroup as group:
            raise collapse(group) from None
    return GarbageCollection(done.deleted, done.batches, stopped_early=done.stopped_early)


@attrs.define
class _Tally:
    deleted: int = 0
    batches: int = 0
    stopped_early: bool = False


async def cancel_created_before(
    runtime: Runtime, created_before_ms: int, *, application_name: str | None
) -> list[str]:
    """Cancel every PENDING/ENQUEUED/DELAYED workflow created before the cutoff (the
    official 2.x ``global_timeout``), in batches; the ids cancelled. One running in this
    process stops at once, elsewhere at its next checkpoint. Cancellation stops between
    batches (those cancelled stay cancelled)."""
    cancelled: list[str] = []
    while True:
        batch = await runtime.sysdb.cancel_created_before(
            application_name, created_before_ms, CANCEL_BATCH, runtime.clock.now_ms()
        )
        runtime.stop_local(batch)
        cancelled.extend(batch)
        if len(batch) < CANCEL_BATCH:
            return cancelled


async def run_policy(
    executor: Executor,
    policy: RetentionPolicy,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Collect by ``policy`` now and every ``interval_seconds`` (+-10 %, Trio clock).

    A run that fails is logged and tried again at the next interval: retention must never
    take the executor's nursery down. Cancellation (shutdown) stops it between batches.
    """
    task_status.started()
    while True:
        try:
            result = await garbage_collect(
                executor,
                completed_before_ms=policy.completed_before_ms(executor.clock.now_ms()),
                keep_newest=policy.keep_newest,
                application_name=executor.app_name,
                batch_size=policy.batch_size,
                leader_only=True,
            )
        except Exception as error:
            logger.warning("retention run failed (trying again next interval): %s", error)
        else:
            if result.deleted:
                logger.info(
                    "retention deleted %d finished workflows in %d batches",
                    result.deleted,
                    result.batches,
                )
            store = executor.codec.payload_store
            if store is not None and not result.stopped_early:
                # The leader, having deleted rows, removes the entries none references.
                try:
                    await collect_payloads(executor, store)
                except Exception as error:
                    logger.warning(
                        "payload collection of %s failed (trying again next interval): %s",
                        store.where(),
                        error,
                    )
        await trio.sleep(policy.interval_seconds * random.uniform(0.9, 1.1))
