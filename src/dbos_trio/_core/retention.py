"""Retention: which stored workflows garbage collection may delete, as pure arithmetic.

Invariant: only *terminal* rows are ever deletable — SUCCESS, ERROR, CANCELLED and
MAX_RECOVERY_ATTEMPTS_EXCEEDED. A PENDING, ENQUEUED or DELAYED row is work still owed to
someone, so no bound, however old, reaches it (the statement filters on status; this
module only computes the bounds). Two bounds, either or both:

* ``completed_before`` (epoch ms): a terminal row that finished before it goes;
* ``keep_newest`` (a count): a terminal row older than the application's ``keep_newest``
  newest workflows goes (those newest are counted among *all* rows, active ones too, as
  the official 2.x ``rows_threshold`` did; ties at the boundary are kept).

A row is deleted if either bound says so. The walk runs through the ``created_at`` index
(a row finishes after it is created, so ``completed < t`` implies ``created < t``): the
upper ``created_at`` bound of the walk is the larger of the two.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from dbos_trio.errors import DBOSInvalidArgumentError

NOTHING = -1
"""A bound that matches no row (every stored time is 0 or more)."""
EVERYTHING = 2**62
"""A bound that matches every row (later than any stored time)."""
DEFAULT_BATCH_SIZE = 2000
"""Rows per batch: one short transaction each, so a purge never holds many row locks or
blocks a claim for long (measured in benchmarks/gc.py)."""
MAX_BATCH_SIZE = 100_000
TERMINAL_STATUSES = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
ACTIVE_STATUSES = ("PENDING", "ENQUEUED", "DELAYED", "PAUSED")


@attrs.frozen
class Bounds:
    """The bounds of one collection, in epoch milliseconds (``NOTHING``: no such bound)."""

    completed_before_ms: int
    keep_before_ms: int

    @property
    def created_before_ms(self) -> int:
        """The walk's upper ``created_at`` bound (exclusive)."""
        return max(self.completed_before_ms, self.keep_before_ms)

    @property
    def empty(self) -> bool:
        return self.created_before_ms == NOTHING


def bounds(completed_before_ms: int | None, nth_newest_created_ms: int | None) -> Bounds:
    """The bounds for a collection, given the cutoff (if any) and the ``created_at`` of the
    ``keep_newest``-th newest workflow (None: no ``keep_newest``, or fewer rows than that)."""
    return Bounds(
        completed_before_ms=NOTHING if completed_before_ms is None else completed_before_ms,
        keep_before_ms=NOTHING if nth_newest_created_ms is None else nth_newest_created_ms,
    )


def check_keep_newest(value: Any, where: str) -> int | None:
    """None, or a count of 0 or more (0 keeps no terminal row)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DBOSInvalidArgumentError(f"{where}: {value!r} must be a whole number, 0 or more")
    return value


def check_batch_size(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BATCH_SIZE:
        raise DBOSInvalidArgumentError(
            f"{where}: {value!r} must be a whole number from 1 to {MAX_BATCH_SIZE}"
        )
    return value


MAX_JOBS = 16


def check_jobs(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_JOBS:
        raise DBOSInvalidArgumentError(
            f"{where}: {value!r} must be a whole number from 1 to {MAX_JOBS}"
        )
    return value


def _seconds(value: Any, where: str, *, optional: bool) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise DBOSInvalidArgumentError(
            f"{where}: {value!r} must be a positive, finite number of seconds"
        )
    return float(value)


@attrs.frozen(kw_only=True)
class RetentionPolicy:
    """What ``Config(retention=...)`` keeps: an executor of the application deletes the
    terminal workflows that finished more than ``max_age_seconds`` ago, and/or those
    older than the ``keep_newest`` newest, every ``interval_seconds`` (Trio clock), in
    batches of ``batch_size``. One executor per application collects at a time.

    A bad value raises :class:`~dbos_trio.DBOSInvalidArgumentError` naming the field, at
    construction (so at ``Config(...)``, before anything connects).
    """

    max_age_seconds: float | None = None
    keep_newest: int | None = None
    interval_seconds: float = 3600.0
    batch_size: int = DEFAULT_BATCH_SIZE

    def __attrs_post_init__(self) -> None:
        _seconds(self.max_age_seconds, "RetentionPolicy.max_age_seconds", optional=True)
        check_keep_newest(self.keep_newest, "RetentionPolicy.keep_newest")
        _seconds(self.interval_seconds, "RetentionPolicy.interval_seconds", optional=False)
        check_batch_size(self.batch_size, "RetentionPolicy.batch_size")
        if self.max_age_seconds is None and self.keep_newest is None:
            raise DBOSInvalidArgumentError(
                "RetentionPolicy: give max_age_seconds, keep_newest or both "
                "(a policy with neither would delete nothing)"
            )

    def completed_before_ms(self, now_ms: int) -> int | None:
        """The cutoff of a collection run at ``now_ms``."""
        if self.max_age_seconds is None:
            return None
        return max(0, now_ms - round(self.max_age_seconds * 1000))
