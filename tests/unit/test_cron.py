"""core/cron.py: which expressions are schedules, which instants they fire at, their ids.

The DST expectations are croniter's (the library the official SDK uses), pinned here so a
library upgrade that changed them — and with them the workflow ids two SDKs must agree
on — fails loudly.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from dbos_trio import DBOSInvalidArgumentError
from dbos_trio._core import cron

NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize("expression", ["* * * * *", "*/5 * * * *", "0 30 9 * * 1-5", "@daily"])
def test_five_and_six_field_expressions_and_aliases_are_schedules(expression: str) -> None:
    assert cron.check_cron(expression) == expression


@pytest.mark.parametrize(
    "expression", ["* * * *", "61 * * * *", "* * * * * * *", "every minute", "0 0 31 2 *x"]
)
def test_other_expressions_are_refused_naming_the_argument(expression: str) -> None:
    with pytest.raises(DBOSInvalidArgumentError, match="schedule"):
        cron.check_cron(expression)


def test_an_unknown_time_zone_is_refused_and_a_known_one_kept() -> None:
    assert cron.check_timezone("Europe/Paris") == "Europe/Paris"
    assert cron.check_timezone(None) is None
    with pytest.raises(DBOSInvalidArgumentError, match="cron_timezone"):
        cron.check_timezone("Mars/Olympus_Mons")


def test_six_fields_mean_seconds_first() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ticks = list(cron.ticks_between("*/15 * * * * *", start, start + timedelta(minutes=1), UTC))
    assert [t.second for t in ticks] == [15, 30, 45]


def test_ids_are_the_official_sdks() -> None:
    tick = datetime(2026, 3, 8, 3, 0, tzinfo=NEW_YORK)
    assert cron.firing_id("nightly", tick) == "sched-nightly-2026-03-08T03:00:00-04:00"
    now = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert (
        cron.trigger_id("nightly", now) == "sched-nightly-trigger-2026-01-02T03:04:05.678901+00:00"
    )


def _day(expression: str, day: datetime) -> list[str]:
    return [
        t.isoformat()
        for t in cron.ticks_between(expression, day, day + timedelta(days=1), NEW_YORK)
    ]


def test_spring_forward_skips_the_missing_hour_and_fires_a_skipped_time_after_the_gap() -> None:
    day = datetime(2026, 3, 8, tzinfo=NEW_YORK) - timedelta(seconds=1)
    hourly = _day("0 * * * *", day)
    assert len(hourly) == 23
    assert hourly[1:3] == ["2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00"]
    assert _day("30 2 * * *", day) == ["2026-03-08T03:00:00-04:00"]


def test_fall_back_fires_the_repeated_hour_once_per_offset() -> None:
    day = datetime(2026, 11, 1, tzinfo=NEW_YORK) - timedelta(seconds=1)
    hourly = _day("0 * * * *", day)
    assert len(hourly) == 25
    assert hourly[1:4] == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]
    assert _day("30 1 * * *", day) == ["2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00"]


def test_jitter_is_at_most_a_tenth_of_the_wait_and_ten_seconds() -> None:
    assert cron.jitter(1.0, 0.999) <= 0.1
    assert cron.jitter(3600.0, 0.999) <= 10.0
    assert cron.jitter(3600.0, 0.5) == 5.0
    assert cron.jitter(-5.0, 0.9) == 0.0


def test_the_latest_ticks_are_counted_back_from_the_end_however_far_the_start() -> None:
    end = datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC)
    # A per-second schedule last fired at the epoch: fifty-six years of ticks, of which
    # only the last five are computed.
    ticks, older = cron.latest_ticks("* * * * * *", datetime(1970, 1, 1, tzinfo=UTC), end, UTC, 5)
    assert [t.second for t in ticks] == [5, 6, 7, 8, 9]
    assert older


def test_the_latest_ticks_say_when_nothing_was_left_out() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ticks, older = cron.latest_ticks("*/15 * * * * *", start, start + timedelta(minutes=1), UTC, 10)
    assert [t.second for t in ticks] == [15, 30, 45]
    assert not older
