"""The overview's pure arithmetic (``_core.activity``, ``_core.human``), its chart scales,
and the overview operations' argument checks: no database.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from dbos_trio._core import activity
from dbos_trio._core.activity import QueueLoad
from dbos_trio._core.human import duration_text, moment_text, relative_text
from dbos_trio._ops import activity as ops
from dbos_trio.dashboard._charts import nice_ceiling, throughput
from dbos_trio.errors import DBOSArgumentTypeError, DBOSInvalidArgumentError

M = activity.MINUTE_MS


class Unreachable(Exception):
    pass


class NoDatabase:
    """A reach to no database: asking it for a runtime raises :class:`Unreachable`."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def runtime(self, operation: str) -> Any:
        self.asked.append(operation)
        raise Unreachable(operation)

    def checkpoint(self, step_name: str, operation: Any) -> Any:
        raise AssertionError("the overview reads are never checkpointed")


def test_every_bucket_is_there_and_a_quiet_minute_is_a_zero() -> None:
    since = 1000 * M
    rows = [(1000, "SUCCESS", 3), (1000, "ERROR", 2), (1002, "CANCELLED", 1), (999, "ERROR", 7)]
    buckets = activity.buckets(rows, since, since + 4 * M, M)
    assert [(b.succeeded, b.failed, b.cancelled) for b in buckets] == [
        (3, 2, 0),
        (0, 0, 0),
        (0, 0, 1),
        (0, 0, 0),
    ]
    wide = activity.buckets(
        [*rows, (1003, "MAX_RECOVERY_ATTEMPTS_EXCEEDED", 4)], since, since + 4 * M, 2 * M
    )
    assert [(b.start_ms, b.succeeded, b.failed) for b in wide] == [
        (since, 3, 2),
        (since + 2 * M, 0, 4),
    ]
    with pytest.raises(ValueError):
        activity.buckets([], since, since + M, 90_000)


def test_percentiles_are_nearest_rank_and_an_incomplete_name_is_left_out() -> None:
    assert [activity.rank(5, p) for p in (50, 95, 99)] == [3, 5, 5]
    assert [activity.rank(100, p) for p in (50, 95, 99)] == [50, 95, 99]
    assert activity.rank(1, 50) == 1
    ranks = [("ok", 3, 2, 200), ("ok", 3, 3, 300), ("cut", 9, 5, 10)]
    [ok] = activity.latencies(ranks)
    assert (ok.name, ok.count, ok.p50, ok.p95, ok.p99, ok.slowest) == ("ok", 3, 200, 300, 300, 300)


def test_a_queue_is_unserved_only_with_old_work_and_no_sign_of_a_worker() -> None:
    now, window = 10_000_000, 30_000
    loads = activity.queue_loads(
        [
            ("idle", "ENQUEUED", 4, now - 300_000),
            ("fresh", "ENQUEUED", 2, now - 1_000),
            ("busy", "ENQUEUED", 9, now - 300_000),
            ("busy", "PENDING", 2, now - 5_000),
            ("draining", "ENQUEUED", 9, now - 300_000),
            ("draining", "STARTED", 5, now - 10_000),
            ("stale", "ENQUEUED", 1, now - 300_000),
            ("stale", "PENDING", 1, now - 60_000),
        ]
    )
    assert [load.queue_name for load in activity.unserved(loads, now, window)] == [
        "idle",
        "stale",
    ]
    assert QueueLoad(queue_name="q").served(now, window) is False


def test_a_schedule_is_overdue_once_its_next_tick_is_past_the_grace() -> None:
    fired = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert activity.next_fire("0 * * * *", None, fired) == datetime(2026, 1, 1, 11, tzinfo=UTC)
    early = datetime(2026, 1, 1, 11, 1, tzinfo=UTC)
    late = datetime(2026, 1, 1, 11, 5, tzinfo=UTC)
    assert activity.overdue_since("0 * * * *", None, fired, early, 120) is None
    assert activity.overdue_since("0 * * * *", None, fired, late, 120) == datetime(
        2026, 1, 1, 11, tzinfo=UTC
    )
    assert activity.next_fire("not a cron", None, fired) is None
    assert activity.next_fire("0 3 * * *", "Nowhere/City", fired) is None
    assert activity.parse_fired("2026-01-01T10:00:00") == fired
    assert activity.parse_fired("yesterday") is None and activity.parse_fired(None) is None


def test_times_and_spans_read_as_a_person_reads_them() -> None:
    assert [duration_text(ms) for ms in (0, 350, 2400, 60_000, 200_000, 7_500_000)] == [
        "0 ms",
        "350 ms",
        "2.4 s",
        "1 min",
        "3 min 20 s",
        "2 h 5 min",
    ]
    assert duration_text(-1) == "" and duration_text(None) == ""
    assert moment_text(0) == "1970-01-01 00:00:00 UTC"
    assert moment_text(2**62) == f"invalid time ({2**62} ms)"
    now = 1_000_000_000
    assert relative_text(now - 200_000, now) == "3 min ago"
    assert relative_text(now + 7_500_000, now) == "in 2 h"
    assert relative_text(now, now) == "just now" and relative_text(2**62, now) == ""


def test_chart_scales_end_on_round_numbers_with_whole_ticks() -> None:
    assert [nice_ceiling(v) for v in (0, 1, 3, 7, 11, 60, 101)] == [1, 1, 5, 10, 20, 100, 200]
    since = 1000 * M
    svg = throughput(activity.buckets([(1000, "SUCCESS", 3)], since, since + 2 * M, M))
    assert ">0</text>" in svg and ">5</text>" in svg and ">2.5</text>" not in svg
    assert "3 succeeded, 0 failed, 0 cancelled" in svg and "<title>" in svg


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda r: ops.overview(r, minutes=0), DBOSInvalidArgumentError),
        (lambda r: ops.overview(r, minutes=ops.MAX_WINDOW_MINUTES + 1), DBOSInvalidArgumentError),
        (lambda r: ops.overview(r, minutes="60"), DBOSArgumentTypeError),
        (lambda r: ops.health(r, heartbeat_interval=0), DBOSInvalidArgumentError),
        (lambda r: ops.health(r, all_applications="yes"), DBOSArgumentTypeError),
    ],
)
def test_a_bad_argument_is_refused_before_the_database_is_asked(call: object, error: type) -> None:
    reach = NoDatabase()
    with pytest.raises(error):
        call(reach)  # type: ignore[operator]
    assert reach.asked == []


def test_a_good_call_asks_for_its_runtime_at_the_call() -> None:
    for call in (lambda r: ops.overview(r), lambda r: ops.health(r)):
        reach = NoDatabase()
        with pytest.raises(Unreachable):
            call(reach)
        assert len(reach.asked) == 1
