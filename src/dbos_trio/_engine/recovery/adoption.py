"""Recovering another executor's work, by hand or automatically, without a control plane.

The official SDK recovers a PENDING row only when an executor with the *same* executor id
launches (or its hosted Conductor says so). Here any live executor can take over:

* **Liveness is the rows' own ``updated_at``.** Every executor stamps the PENDING rows
  it is running every ``Config.heartbeat_interval`` (one ``UPDATE`` per interval, only
  when something runs). The shared schema has no table of ours, and needs none: what
  matters is not whether a process lives but whether a given row's execution does, and a
  row is exactly what the stamp is on. An executor with nothing running has nothing to
  adopt, so it needs no heartbeat.
* **A row is taken over only if not stamped for three heartbeat intervals** (a missed
  stamp or two — a slow database, a pause — does not look like death), in one write that
  clears its owner token: the fence. If its owner was alive after all (a partition, a
  process stopped for minutes), its execution fails at its next checkpoint write and
  parks, and the adopter runs the row from its checkpoints; at most the step that was in
  flight runs in both. The cancel watcher of the old owner also stops it when it sees
  the row re-owned.
* **Silence counts only while the judge could hear.** An executor cut off from the database
  (an outage, a partition, a process paused for a while) saw nobody's stamps, and its
  peers, cut off by the same outage, could not write any: after it reconnects it judges
  no one until it has reached the database without a break for the whole adoption
  window, by which time every live peer has stamped again. Only silence the judge was
  there to observe can mean death.
* **Only executors that stamp are judged.** Owner tokens of dbos_trio executions carry a
  mark (:func:`~dbos_trio._core.ids.heartbeat_owner_token`); an executor whose rows lack
  it (an official SDK executor, which never stamps) is never adopted automatically, however
  long its rows look still: only ``recover_executor`` moves its work.
* **Rows keep their version.** A re-enqueued row runs on an executor of its version
  (that is what a version means); one of a version nobody runs is reported (doctor).

:func:`recover_executor` is the manual form (``dbos-trio workflow recover --executor``);
:func:`heartbeat` the background task, which also adopts when
``Config.adopt_dead_executors_after`` is set.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

import trio

from dbos_trio._sysdb.wakeups import queue_key
from dbos_trio.errors import SystemDatabaseError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, Runtime

logger = logging.getLogger("dbos_trio.recovery")

# A row stamped within this many heartbeat intervals is taken to be running somewhere.
LIVENESS_INTERVALS = 3


def stamp_interval(executor: Executor) -> float:
    """Seconds between this executor's stamps: ``Config.heartbeat_interval``, stretched
    to the background interval under virtual pacing (dbos_trio.testing), as
    :func:`heartbeat` stretches it. Every window judging liveness is measured in it, so a
    paced executor's own rows do not look silent between two of its stamps."""
    interval = executor.config.heartbeat_interval
    if executor.background_interval is not None:
        interval = max(interval, executor.background_interval)
    return interval


def live_window_ms(executor: Executor) -> int:
    return window_ms(stamp_interval(executor))


def adoption_window(executor: Executor) -> float | None:
    """Seconds of silence after which this executor adopts another's rows
    (``Config.adopt_dead_executors_after``), at least six stamp intervals under virtual
    pacing, where the stamps are stretched; None: it never adopts."""
    after = executor.config.adopt_dead_executors_after
    if after is None or executor.background_interval is None:
        return after
    return max(after, 2 * LIVENESS_INTERVALS * stamp_interval(executor))


def window_ms(heartbeat_interval: float) -> int:
    """The liveness window for executors stamping every ``heartbeat_interval`` seconds."""
    return round(LIVENESS_INTERVALS * heartbeat_interval * 1000)


async def recover_executor(
    executor: Executor, executor_id: str, *, application_version: str | None = None
) -> list[str]:
    """:func:`recover` from a launched executor (its application, its liveness window),
    waking its queue workers to run what moved."""
    moved = await recover(
        executor,
        executor_id,
        application_name=executor.app_name,
        application_version=application_version,
        live_window=live_window_ms(executor),
    )
    if moved:
        _wake_workers(executor)
    return moved


async def recover(
    runtime: Runtime,
    executor_id: str,
    *,
    application_name: str,
    application_version: str | None,
    live_window: int,
) -> list[str]:
    """Re-enqueue ``executor_id``'s PENDING rows of ``application_name`` (and unclaimed
    ones; of ``application_version``, or every version when None) not stamped within
    ``live_window`` ms; the ids moved. Rows left as alive are logged with their count."""
    now = runtime.clock.now_ms()
    moved = await runtime.sysdb.reenqueue_executor(
        executor_id,
        application_version,
        application_name,
        now,
        updated_before_ms=now - live_window,
    )
    counts = await runtime.sysdb.active_counts(application_name)
    skipped = sum(
        c.count
        for c in counts
        if c.status == "PENDING"
        and c.executor_id == executor_id
        and (application_version is None or c.application_version == application_version)
    )
    if skipped:
        logger.warning(
            "executor %s still has %d PENDING workflow(s) stamped within the last %g s: it "
            "looks alive, so they were left to it (recover again once it is gone)",
            executor_id,
            skipped,
            live_window / 1000,
        )
    if moved:
        logger.info(
            "re-enqueued %d workflow(s) of executor %s: %s",
            len(moved),
            executor_id,
            ", ".join(moved[:5]) + (" ..." if len(moved) > 5 else ""),
        )
    return moved


def _wake_workers(executor: Executor) -> None:
    for name in executor.queue_set.working:
        executor.wakeups.wake(queue_key(name))


async def adopt_silent(
    executor: Executor, hearing: Hearing | None = None, now: float | None = None
) -> dict[str, list[str]]:
    """One adoption pass: the PENDING rows of every executor silent for longer than
    ``Config.adopt_dead_executors_after``, re-enqueued; by executor id.

    With ``hearing`` (the heartbeat's), the query doubles as the probe that the database
    answers, and nothing is adopted unless this executor has reached it without a break for
    the whole window (``now`` is the Trio clock's reading)."""
    after = adoption_window(executor)
    if after is None:
        return {}
    now_ms = executor.clock.now_ms()
    silent_before = now_ms - round(after * 1000)
    silent = await executor.sysdb.silent_executors(
        executor.app_name, executor.executor_id, silent_before
    )
    if hearing is not None:
        assert now is not None
        hearing.reached(now)
        if hearing.continuous_for(now) < after:
            if silent:
                logger.info(
                    "executor(s) %s look silent, but this executor has reached the database "
                    "without a break for only %.1f s of the %g s needed to judge: waiting",
                    ", ".join(silent),
                    hearing.continuous_for(now),
                    after,
                )
            return {}
    adopted: dict[str, list[str]] = {}
    for dead in silent:
        moved = await executor.sysdb.reenqueue_executor(
            dead, None, executor.app_name, now_ms, updated_before_ms=silent_before
        )
        if moved:
            adopted[dead] = moved
            logger.warning(
                "executor %s has been silent for over %g s: adopted its %d PENDING "
                "workflow(s) (%s)",
                dead,
                after,
                len(moved),
                ", ".join(moved[:5]) + (" ..." if len(moved) > 5 else ""),
            )
    if adopted:
        _wake_workers(executor)
    return adopted


async def heartbeat(
    executor: Executor, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Stamp the rows running here every heartbeat interval (Trio clock, +-10 %), and
    adopt silent executors' work when configured. A database failure is logged and
    retried at the next interval; cancellation stops it between passes."""
    task_status.started()
    # Paced tests (dbos_trio.testing, virtual time): a stamp every few virtual seconds of a
    # simulated week would cost real seconds of writes, and one process has no peer to read
    # them, so only an executor configured to adopt stamps, spaced out (and judges others
    # by the stretched interval: stamp_interval, adoption_window).
    if (
        executor.background_interval is not None
        and executor.config.adopt_dead_executors_after is None
    ):
        await trio.sleep_forever()
    interval = stamp_interval(executor)
    hearing = Hearing(interval)
    while True:
        await trio.sleep(interval * random.uniform(0.9, 1.1))
        try:
            running = sorted(executor.local)
            if running:
                await executor.sysdb.touch_running(
                    executor.executor_id, running, executor.clock.now_ms()
                )
                hearing.reached(trio.current_time())
            await adopt_silent(executor, hearing, trio.current_time())
        except SystemDatabaseError as error:
            hearing.lost()
            logger.warning("heartbeat failed (trying again next interval): %s", error)


class Hearing:
    """Since when this executor has reached the database without a break (Trio clock).

    A break is a failed pass, or a gap between two passes longer than two intervals (the
    process was paused, or one call waited out an outage inside the retrier): peers could
    not be heard then, so their silence from before it is no evidence.
    """

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._since: float | None = None
        self._last: float | None = None

    def reached(self, now: float) -> None:
        """A round trip to the database just succeeded."""
        if self._last is None or now - self._last > 2.2 * self._interval:
            self._since = now
        self._last = now

    def lost(self) -> None:
        """A round trip failed: whatever follows starts a new stretch."""
        self._since = self._last = None

    def continuous_for(self, now: float) -> float:
        """Seconds of unbroken contact up to the last round trip (0 if none yet)."""
        if self._since is None or self._last is None or now - self._last > 2.2 * self._interval:
            return 0.0
        return self._last - self._since
