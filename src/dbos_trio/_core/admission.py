"""Queue admission: what a queue's configuration allows, and how many workflows to claim.

Pure logic, no Trio and no database. The three budgets and who counts them:

* ``worker_concurrency`` / ``partition_worker_concurrency`` — this process's running
  workflows, counted in memory (:class:`RunningCounts`);
* ``global_concurrency`` / ``partition_concurrency`` — PENDING rows across every executor,
  counted by the claim statement itself;
* ``limiter`` / ``partition_limiter`` — starts within the last ``period`` seconds, counted
  by the claim statement from ``rate_limited`` rows (finished runs still count).

Only the first is computed here; the others travel as limits into the claim, which
reads the counts in the same consistent snapshot it claims in.
"""

from __future__ import annotations

from collections import Counter

import attrs

from dbos_trio._core import validate
from dbos_trio.errors import DBOSArgumentTypeError, DBOSInvalidArgumentError

RESERVED_QUEUE_PREFIX = "_dbos_"


def _check_positive_limit(field: str, value: int | None) -> None:
    """None, or a positive count that fits the ``queues`` table's integer columns."""
    validate.optional_integer(value, field, low=1, high=validate.INT32_MAX)


@attrs.frozen
class RateLimit:
    """At most ``limit`` workflow starts per ``period`` seconds.

    A plain record: it also carries what a stored ``queues`` row says, whoever wrote it.
    ``register_queue`` checks it (:func:`validate_queue`), before anything is written.
    """

    limit: int
    period: float

    def check(self, field: str) -> None:
        """Raise ``ValueError`` unless the limit and the period are positive and finite."""
        validate.integer(self.limit, f"{field}.limit", low=1, high=validate.INT32_MAX)
        validate.seconds(self.period, f"{field}.period", positive=True)


@attrs.frozen(kw_only=True)
class QueueConfig:
    """One row of the ``queues`` table."""

    name: str
    global_concurrency: int | None = None
    worker_concurrency: int | None = None
    limiter: RateLimit | None = None
    partition_concurrency: int | None = None
    partition_worker_concurrency: int | None = None
    partition_limiter: RateLimit | None = None
    polling_interval_sec: float = 1.0
    application_name: str | None = None
    # Paused: no executor claims from it (running work goes on). Stored as a global
    # concurrency of 0 or below (see paused_concurrency), which every SDK honours.
    paused: bool = False

    @property
    def partitioned(self) -> bool:
        """Any per-partition limit makes a queue partitioned (every enqueue needs a key)."""
        return (
            self.partition_concurrency is not None
            or self.partition_worker_concurrency is not None
            or self.partition_limiter is not None
        )

    @property
    def has_shared_budget(self) -> bool:
        """Whether claims spend a budget other executors share (so need a consistent snapshot)."""
        return (
            self.global_concurrency is not None
            or self.limiter is not None
            or self.partition_concurrency is not None
            or self.partition_limiter is not None
        )


def paused_concurrency(global_concurrency: int | None) -> int:
    """What a paused queue stores as its ``concurrency``: the limit it will have again when
    unpaused, negated (0 for none). No SDK claims from a queue whose global concurrency is 0
    or below, so the pause holds for every executor sharing the database."""
    return -(global_concurrency or 0)


def stored_concurrency(config: QueueConfig) -> int | None:
    """The ``concurrency`` column for ``config``: its global limit, or the paused form."""
    if config.paused:
        return paused_concurrency(config.global_concurrency)
    return config.global_concurrency


def read_concurrency(stored: int | None) -> tuple[int | None, bool]:
    """(global concurrency, paused) from the ``concurrency`` column: 0 or below is a
    paused queue, holding its limit negated (the inverse of :func:`stored_concurrency`)."""
    if stored is not None and stored <= 0:
        return (-stored or None), True
    return stored, False


def validate_queue(config: QueueConfig) -> None:
    """Raise :class:`DBOSInvalidArgumentError` (a ``ValueError``) naming the problem if
    ``config`` is not a valid queue to register (the stored-row checks of
    :func:`check_limits`, a name not reserved, and per-partition and per-worker limits no
    higher than the limits above them)."""
    name = validate.text(config.name, "queue name")
    if name.startswith(RESERVED_QUEUE_PREFIX):
        raise DBOSInvalidArgumentError(
            f"queue name {name!r} is reserved: names starting with {RESERVED_QUEUE_PREFIX!r} "
            "belong to DBOS's internal queues"
        )
    check_limits(config)
    ceilings = (
        ("global_concurrency", "worker_concurrency"),
        ("global_concurrency", "partition_concurrency"),
        ("global_concurrency", "partition_worker_concurrency"),
        ("partition_concurrency", "partition_worker_concurrency"),
        ("worker_concurrency", "partition_worker_concurrency"),
    )
    for upper, lower in ceilings:
        high, low = getattr(config, upper), getattr(config, lower)
        if high is not None and low is not None and low > high:
            raise DBOSInvalidArgumentError(
                f"{upper} ({high}) must be greater than or equal to {lower} ({low})"
            )


def stored_queue_problem(config: QueueConfig) -> str | None:
    """Why a stored ``queues`` row cannot be served as it is, or None.

    Rows are written by every SDK and by hand, so a row is served as written wherever
    its values mean something — a zero limit admits nothing, a zero polling interval is
    floored by the worker — and refused (reported, and its queue left unserved) only
    where they cannot: a negative count, a NaN, an infinite or negative period or
    interval. One bad row must neither stop the executor nor silently block its queue.
    """
    try:
        validate.text(config.name, "name")
        for field in (
            "global_concurrency",
            "worker_concurrency",
            "partition_concurrency",
            "partition_worker_concurrency",
        ):
            validate.optional_integer(getattr(config, field), field, low=0, high=validate.INT32_MAX)
        for field in ("limiter", "partition_limiter"):
            limiter = getattr(config, field)
            if limiter is not None:
                validate.integer(limiter.limit, f"{field}.limit", low=0, high=validate.INT32_MAX)
                validate.seconds(limiter.period, f"{field}.period")
        validate.seconds(config.polling_interval_sec, "polling_interval_sec")
    except ValueError as problem:
        return problem.args[0] if problem.args else str(problem)
    return None


def check_limits(config: QueueConfig) -> None:
    """The limits of ``config``, each in its range (``ValueError`` naming the first that
    is not)."""
    for field in (
        "global_concurrency",
        "worker_concurrency",
        "partition_concurrency",
        "partition_worker_concurrency",
    ):
        _check_positive_limit(field, getattr(config, field))
    for field in ("limiter", "partition_limiter"):
        value = getattr(config, field)
        if value is None:
            continue
        if not isinstance(value, RateLimit):
            raise DBOSArgumentTypeError(
                f"{field} must be a RateLimit(limit, period), not {value!r}"
            )
        value.check(field)
    validate.seconds(config.polling_interval_sec, "polling_interval_sec", positive=True)


class RunningCounts:
    """This process's running workflows per queue and per (queue, partition)."""

    def __init__(self) -> None:
        self._per_queue: Counter[str] = Counter()
        self._per_partition: Counter[tuple[str, str]] = Counter()

    def add(self, queue: str, partition: str | None) -> None:
        self._per_queue[queue] += 1
        if partition is not None:
            self._per_partition[(queue, partition)] += 1

    def remove(self, queue: str, partition: str | None) -> None:
        self._per_queue[queue] -= 1
        if self._per_queue[queue] <= 0:
            del self._per_queue[queue]
        if partition is not None:
            key = (queue, partition)
            self._per_partition[key] -= 1
            if self._per_partition[key] <= 0:
                del self._per_partition[key]

    def running(self, queue: str, partition: str | None = None) -> int:
        if partition is None:
            return self._per_queue[queue]
        return self._per_partition[(queue, partition)]


def local_budget(config: QueueConfig, counts: RunningCounts, partition: str | None) -> int | None:
    """How many more workflows this process may start on the queue (partition); None = no cap."""
    budgets: list[int] = []
    if config.worker_concurrency is not None:
        budgets.append(config.worker_concurrency - counts.running(config.name))
    if partition is not None and config.partition_worker_concurrency is not None:
        budgets.append(config.partition_worker_concurrency - counts.running(config.name, partition))
    if not budgets:
        return None
    return max(0, min(budgets))


def next_poll_interval(current: float, base: float, *, contended: bool) -> float:
    """Adaptive polling: double on contention (capped at max(120 s, base)), else decay to base."""
    if contended:
        return min(current * 2.0, max(120.0, base))
    return max(base, current * 0.9)


def paced_polling(config: QueueConfig, background_interval: float) -> float:
    """A queue's polling interval when background work is spaced ``background_interval``
    apart: at least that, but at most half its shortest rate-limit period (so a reopened
    window is noticed in time), and never below what the queue asks for."""
    interval = max(config.polling_interval_sec, background_interval)
    periods = [limiter.period for limiter in (config.limiter, config.partition_limiter) if limiter]
    if periods:
        interval = min(interval, max(config.polling_interval_sec, min(periods) / 2))
    return interval


def claim_budget(local: int | None, shared: list[tuple[int, int]]) -> int | None:
    """How many rows one claim may take: the least of the local budget and each shared
    limit's ``cap - used`` (never below 0); None when no limit applies."""
    limits = [cap - used for cap, used in shared]
    if local is not None:
        limits.append(local)
    return max(0, min(limits)) if limits else None
