"""The dequeue supervisor and its per-queue workers, all tasks of the executor's nursery.

Invariants, and why:

* The worker set follows the database: every sweep the supervisor releases due DELAYED
  rows (and wakes the workers if it released any), reads the ``queues`` table (this
  application's and unclaimed queues), adds the internal queue, narrows the set by
  ``Config.listen_queues``, and starts a worker for each queue that has none. A worker
  leaves when its queue leaves the set. A failed sweep keeps the previous set: a database
  hiccup must not stop the queues.
* DELAYED rows start at their time, not at the next sweep: the sweep reads when the
  earliest comes due and sweeps again then (if sooner than the sweep interval), and a new
  DELAYED row (written here, or NOTIFYed by another dbos_trio process) wakes it to read
  again.
* A worker claims with one statement (``SystemDatabase.claim``) sized by the budgets,
  and dispatches what it claimed in dequeue order. A lock or serialization conflict means
  a peer is claiming too: back off (x2, up to 120 s) and decay (x0.9) back to the queue's
  polling interval, with +-5 % jitter so peers drift apart.
* A worker wakes early when this process enqueues on its queue or frees one of its slots,
  and when another dbos_trio process enqueues on it (a NOTIFY on the queue channel, with
  notifications on), so such work never waits for the polling interval; rows written by
  other SDKs (which NOTIFY nothing) are found by polling. How soon a worker claims again
  depends on what its last claim found (the pause counts from that claim's start, and is
  at most the polling interval):

  - one row or none: at once. A caller that enqueues one workflow at a time and waits
    for each is never delayed (an unconditional pause cost it the pause per workflow);
  - as many rows as it had free slots (a backlog), one row included when other slots
    were busy: once half its slots are free again, or ``CLAIM_SPACING_SECONDS`` after
    that claim's end, whichever is first. The slots freed meanwhile are filled by one
    claim, not one claim each (a drain at concurrency 16 had made half its claims for a
    single freed slot, each a full claim statement), and a cohort that finishes together
    is refilled at once (a fixed spacing had idled ~40 % of each cycle of such a drain);
  - several rows but fewer than its free slots (work trickling in, S4's stream of
    enqueues): after ``CLAIM_WINDOW_SECONDS``, so what arrives meanwhile goes in one
    claim and the workflows it starts together share their commits (S4, in process:
    ~600 completions/s with the old unconditional 5 ms, ~800 with a 50 ms window).
* A worker whose claim was held back by the queue's rate limit (a full window) sleeps
  until the window admits the next start, not a whole polling interval.
* Under a global limit, executors take turns. A worker wakes at once when one of its own
  slots frees, so the executors that hold the limit would refill it forever while a later
  one, polling, always finds it spent (0 of 40 jobs in a fleet run). A worker whose claim
  finds nothing while it has free slots asks for a turn (``request_turn``: it marks the
  head row it waits for); while a turn is waiting, the others' claims keep to a fair share
  of the limit, so the next slot an executor over its share frees is the waiter's. Claims
  still all lock the same head rows (a turn's row is not skipped): that is what makes two
  claims spending one budget conflict. Alone on a queue an executor uses the whole limit.
  Partitioned queues take no turns.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

import attrs
import trio

from dbos_trio._core.admission import (
    QueueConfig,
    local_budget,
    next_poll_interval,
    paced_polling,
    stored_queue_problem,
)
from dbos_trio._core.ids import heartbeat_owner_token
from dbos_trio._engine.runtime.dispatch import dispatch
from dbos_trio._sysdb.protocol import QueueContention
from dbos_trio._sysdb.records import INTERNAL_QUEUE, ClaimedWorkflow, ClaimRequest
from dbos_trio._sysdb.wakeups import Subscription, delayed_key, queue_key
from dbos_trio.errors import SystemDatabaseError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.dequeue")

SWEEP_INTERVAL_SECONDS = 1.0
# A stored polling interval of zero (the queues table is shared; another writer may not
# validate) must not turn a worker into a busy loop against the database.
MIN_POLL_INTERVAL_SECONDS = 0.01
# The least time between the starts of two claims of one worker: after a claim that
# filled every free slot, and after one that found several rows trickling in.
CLAIM_SPACING_SECONDS = 0.005
CLAIM_WINDOW_SECONDS = 0.05
INTERNAL_QUEUE_CONFIG = QueueConfig(name=INTERNAL_QUEUE)
# Turn-taking under a global limit (see QueueStore.request_turn): a turn outlives this
# many polls of its executor, and at least this long.
TURN_WINDOW_POLLS = 3
MIN_TURN_WINDOW_SECONDS = 3.0


def served_queues(
    executor: Executor, configs: list[QueueConfig], warned: set[str]
) -> frozenset[str]:
    names = {INTERNAL_QUEUE}
    for config in configs:
        if config.name == INTERNAL_QUEUE:
            if INTERNAL_QUEUE not in warned:
                warned.add(INTERNAL_QUEUE)
                logger.warning("ignoring a stored queue row named %s", INTERNAL_QUEUE)
            continue
        problem = stored_queue_problem(config)
        if problem is not None:
            report = f"{config.name}: {problem}"
            if report not in warned:
                warned.add(report)
                logger.warning(
                    "queue %s is not served: its row in the queues table is invalid (%s); "
                    "fix or re-register it",
                    config.name,
                    problem,
                )
            continue
        if _paused(config, warned):
            continue
        names.add(config.name)
    allowed = executor.config.listen_queues
    if allowed is not None:
        names = {name for name in names if name in allowed or name == INTERNAL_QUEUE}
    return frozenset(names)


def _paused(config: QueueConfig, warned: set[str]) -> bool:
    """Whether the queue is paused (not served: its worker leaves), said once per pause."""
    seen = f"paused:{config.name}"
    if not config.paused:
        warned.discard(seen)
        return False
    if seen not in warned:
        warned.add(seen)
        logger.info(
            "queue %s is paused: no new work is claimed from it until "
            "`dbos-trio queue unpause %s`",
            config.name,
            config.name,
        )
    return True


async def supervise(
    executor: Executor,
    *,
    sweep_interval: float = SWEEP_INTERVAL_SECONDS,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Keep one worker per served queue, sweeping every ``sweep_interval`` (Trio clock)."""
    queues = executor.queue_set
    warned: set[str] = set()
    started = False
    with executor.wakeups.subscribe(delayed_key()) as delayed:
        while True:
            next_due: int | None = None
            try:
                sysdb = executor.sysdb
                released = await sysdb.release_delayed(executor.app_name, executor.clock.now_ms())
                configs = await sysdb.list_queues(executor.app_name)
                latest = await sysdb.latest_version(executor.app_name)
                executor.is_latest_version = latest is None or latest == executor.app_version
                queues.served = served_queues(executor, configs, warned)
                if released:
                    # Released rows are new work: look now, not at each queue's next poll.
                    for name in queues.working:
                        executor.wakeups.wake(queue_key(name))
                next_due = await sysdb.next_delayed_due(executor.app_name)
            except SystemDatabaseError as error:
                logger.warning("queue sweep failed (keeping the previous queue set): %s", error)
            except Exception as error:  # a row no SDK writes: the sweep goes on without it
                logger.exception("queue sweep failed (keeping the previous queue set): %r", error)
            for name in sorted(queues.served - queues.working):
                queues.working.add(name)
                executor.spawn(run_worker, executor, name)
            if not started:
                started = True
                task_status.started()
            # Until the next sweep, the earliest delay coming due, or a new DELAYED row
            # written (here, or by another dbos_trio process through NOTIFY).
            await delayed.wait(sweep_wait(sweep_interval, next_due, executor.clock.now_ms()))


def sweep_wait(sweep_interval: float, next_due_ms: int | None, now_ms: int) -> float:
    """Seconds until the supervisor's next sweep: at most ``sweep_interval``, and no later
    than the first DELAYED row's time (``next_due_ms``, epoch ms; None: none)."""
    if next_due_ms is None:
        return sweep_interval
    # A millisecond late, so the row is due by the database's clock as well as ours.
    return max(0.0, min(sweep_interval, (next_due_ms - now_ms + 1) / 1000))


async def run_worker(executor: Executor, queue_name: str) -> None:
    """Claim and dispatch work for one queue until it is no longer served."""
    queues = executor.queue_set
    config: QueueConfig | None = None
    config_read_at = -float("inf")
    interval: float | None = None
    last_claim_at = -float("inf")
    pause = 0.0  # the least time from the last claim's start to the next one's
    backlog = False  # the last claim filled every free slot
    try:
        with executor.wakeups.subscribe(queue_key(queue_name)) as wakeup:
            while queue_name in queues.served:
                now = trio.current_time()
                if config is None or now - config_read_at >= config.polling_interval_sec:
                    config = await _read_config(executor, queue_name, config)
                    config_read_at = now
                    if config is None:
                        return
                base = max(config.polling_interval_sec, MIN_POLL_INTERVAL_SECONDS)
                hold_until = last_claim_at + min(pause, base)
                if backlog:
                    await _slots_or_spacing(executor, config, wakeup, hold_until)
                elif trio.current_time() < hold_until:
                    await trio.sleep(hold_until - trio.current_time())
                budget = local_budget(config, executor.running, None)
                last_claim_at = trio.current_time()
                contended = False
                claim_took = 0.0
                claimed: list[tuple[ClaimedWorkflow, str]] = []
                try:
                    claimed = await claim_once(executor, config)
                    claim_took = trio.current_time() - last_claim_at
                except QueueContention:
                    contended = True
                except SystemDatabaseError as error:
                    logger.warning("dequeue from %s failed: %s", queue_name, error)
                except Exception as error:  # never let one bad claim stop the worker
                    contended = True  # back off, as from a busy peer
                    logger.exception("dequeue from %s failed: %r", queue_name, error)
                executor.starting.update(row.workflow_id for row, _ in claimed)
                try:
                    for row, owner_xid in claimed:
                        # Each claimed row is dispatched on its own: one failure must not
                        # strand the rest of the batch PENDING under this executor.
                        try:
                            await dispatch(executor, row, owner_xid)
                        except SystemDatabaseError as error:
                            logger.warning(
                                "cannot start dequeued workflow %s (it stays PENDING; the "
                                "orphan sweep runs it again): %s",
                                row.workflow_id,
                                error,
                            )
                        except Exception as error:
                            quarantine(executor, row.workflow_id, error)
                        executor.starting.discard(row.workflow_id)
                finally:
                    executor.starting.difference_update(row.workflow_id for row, _ in claimed)
                pause = claim_pause(len(claimed), budget, config.worker_concurrency)
                backlog = pause == CLAIM_SPACING_SECONDS
                if backlog:
                    # Counted from the claim's end: a claim slower than the spacing (a
                    # loaded server) would otherwise leave none, and each freed slot
                    # would cost a claim of its own.
                    pause += claim_took
                interval = next_poll_interval(interval or base, base, contended=contended)
                wait = interval * random.uniform(0.95, 1.05)
                if not contended and (budget is None or len(claimed) < budget):
                    wait = min(wait, await rate_window_wait(executor, config))
                await wakeup.wait(wait)
    finally:
        queues.working.discard(queue_name)


async def _slots_or_spacing(
    executor: Executor, config: QueueConfig, wakeup: Subscription, until: float
) -> None:
    """After a claim that filled every free slot: hold the next claim until half the
    worker's slots are free again, or until ``until`` (Trio clock), whichever is first.

    One claim then serves several freed slots (not one claim per slot), and a cohort that
    finishes together is refilled at once instead of idling out a fixed spacing (a drain
    at concurrency 16 spent ~40 % of each claim-to-claim cycle in that spacing). The
    wakeups consumed here are slots freeing or work arriving; the claim that follows
    serves them either way."""
    enough = slots_worth_a_claim(config.worker_concurrency)
    while trio.current_time() < until:
        free = local_budget(config, executor.running, None)
        if free is None or free >= enough:
            return
        await wakeup.wait(until - trio.current_time())


def slots_worth_a_claim(worker_concurrency: int | None) -> int:
    """How many free slots make a claim worth its statement while a backlog waits: half
    the worker's slots, rounded up (1 without a cap)."""
    if worker_concurrency is None:
        return 1
    return max(1, -(-worker_concurrency // 2))


async def rate_window_wait(executor: Executor, config: QueueConfig) -> float:
    """Seconds until the queue's rate limit admits another start, if that is what held
    the last claim back (its window is full); infinity otherwise, or when the queue has no
    queue-wide limit (a partition's limit is left to polling). A failed read is infinity:
    the worker polls as usual."""
    limiter = config.limiter
    if limiter is None or config.partitioned:
        return float("inf")
    now_ms = executor.clock.now_ms()
    try:
        reopens = await executor.sysdb.rate_window_reopens(
            config.name, executor.app_name, limiter.limit, round(limiter.period * 1000), now_ms
        )
    except SystemDatabaseError:
        return float("inf")
    if reopens is None:
        return float("inf")
    # A millisecond late, so the start has left the window by the claim's clock too.
    return max(MIN_POLL_INTERVAL_SECONDS, (reopens - now_ms + 1) / 1000)


def claim_pause(found: int, budget: int | None, capacity: int | None = None) -> float:
    """How long after a claim's start the next may start, from the rows it ``found``, the
    free slots (``budget``, None: no cap) it had, and the worker's slots in all
    (``capacity``, None: no cap); see the module docstring."""
    filled = budget is not None and found >= budget > 0
    if filled and (found > 1 or (capacity is not None and capacity > found)):
        # A backlog: even one row taking the one slot that was free, while others are
        # busy, means more is waiting. Let a few more slots free before the next claim.
        return CLAIM_SPACING_SECONDS
    if found <= 1:
        return 0.0
    return CLAIM_WINDOW_SECONDS


def quarantine(executor: Executor, workflow_id: str, problem: BaseException) -> None:
    """Leave alone a row this executor cannot interpret (it stays PENDING), logged once:
    the rest of the queue keeps running, and no sweep hands it back to loop forever."""
    if workflow_id not in executor.quarantined:
        executor.quarantined.add(workflow_id)
        logger.error(
            "workflow %s cannot be started from its row and is left alone (quarantined): %r",
            workflow_id,
            problem,
        )


async def _read_config(
    executor: Executor, queue_name: str, previous: QueueConfig | None
) -> QueueConfig | None:
    """The queue's configuration now (paced when the executor spaces background work)."""
    if queue_name == INTERNAL_QUEUE:
        config: QueueConfig | None = INTERNAL_QUEUE_CONFIG
    else:
        try:
            config = await executor.sysdb.get_queue(queue_name)
        except SystemDatabaseError as error:
            logger.warning(
                "cannot re-read queue %s (keeping its last configuration): %s", queue_name, error
            )
            return previous
    if config is not None and (config.paused or stored_queue_problem(config) is not None):
        return None  # the supervisor stops serving it (and says why)
    spacing = executor.background_interval
    if config is not None and spacing is not None:
        config = attrs.evolve(config, polling_interval_sec=paced_polling(config, spacing))
    return config


def _request(
    executor: Executor, config: QueueConfig, partition: str | None, owner_xid: str
) -> ClaimRequest:
    limiter, partition_limiter = config.limiter, config.partition_limiter
    return ClaimRequest(
        queue_name=config.name,
        partition_key=partition,
        owner_xid=owner_xid,
        executor_id=executor.executor_id,
        application_version=executor.app_version,
        application_name=executor.app_name,
        runs_latest_version=executor.is_latest_version,
        workflow_names=executor.workflow_names,
        now_ms=executor.clock.now_ms(),
        local_budget=local_budget(config, executor.running, partition),
        global_concurrency=config.global_concurrency,
        rate_limit_max=limiter.limit if limiter else None,
        rate_limit_period_ms=round(limiter.period * 1000) if limiter else None,
        partition_concurrency=config.partition_concurrency if partition is not None else None,
        partition_rate_limit_max=(
            partition_limiter.limit if partition_limiter and partition is not None else None
        ),
        partition_rate_limit_period_ms=(
            round(partition_limiter.period * 1000)
            if partition_limiter and partition is not None
            else None
        ),
        consistent=config.has_shared_budget,
        rate_limited=limiter is not None or partition_limiter is not None,
        turn_window_ms=turn_window_ms(config) if partition is None else None,
    )


def turn_window_ms(config: QueueConfig) -> int | None:
    """How long a turn asked for on a globally limited queue stays valid (None: the queue
    has no global limit, so no turns): three polls of the waiting executor, which renews
    its turn at each poll, and at least ``MIN_TURN_WINDOW_SECONDS``."""
    if config.global_concurrency is None:
        return None
    seconds = max(TURN_WINDOW_POLLS * config.polling_interval_sec, MIN_TURN_WINDOW_SECONDS)
    return round(seconds * 1000)


async def claim_once(executor: Executor, config: QueueConfig) -> list[tuple[ClaimedWorkflow, str]]:
    """One poll of one queue: what this executor claimed, with the claim's owner token."""
    owner_xid = heartbeat_owner_token()
    if not config.partitioned:
        request = _request(executor, config, None, owner_xid)
        if request.local_budget == 0:
            return []
        claimed = await executor.sysdb.claim(request)
        if not claimed and request.turn_window_ms is not None:
            # Nothing for us although we have free slots: if the global limit is what is
            # spent, wait for a turn rather than lose every freed slot to its holders.
            await executor.sysdb.request_turn(request)
        return [(row, owner_xid) for row in claimed]
    claimed_all: list[tuple[ClaimedWorkflow, str]] = []
    partitions = await executor.sysdb.list_partitions(config.name)
    random.shuffle(partitions)
    for partition in partitions:
        request = _request(executor, config, partition, owner_xid)
        if local_budget(config, executor.running, None) == 0:
            break
        if request.local_budget == 0:
            continue
        try:
            claimed = await executor.sysdb.claim(request)
        except QueueContention:
            continue  # a peer is on this partition; try the others
        for row in claimed:
            # Count claimed rows at once, so the next partition's budget sees them.
            executor.running.add(row.queue_name, row.partition_key)
        claimed_all.extend((row, owner_xid) for row in claimed)
    for row, _ in claimed_all:
        executor.running.remove(row.queue_name, row.partition_key)
    return claimed_all
