"""An executor judges others' silence only over time it could have heard them.

:class:`~dbos_trio._engine.recovery.adoption.Hearing` is the heartbeat's record of unbroken
contact with the database; adoption waits until it spans the whole adoption window. Pure
arithmetic on the Trio clock's readings, checked without a database.
"""

from __future__ import annotations

from dbos_trio._core.ids import (
    HEARTBEAT_OWNER_MARK,
    heartbeat_owner_token,
    is_heartbeat_owner_token,
    random_uuid,
)
from dbos_trio._engine.recovery.adoption import Hearing


def test_contact_grows_with_every_round_trip_one_interval_apart() -> None:
    hearing = Hearing(1.0)
    for second in range(7):
        hearing.reached(100.0 + second)
    assert hearing.continuous_for(106.0) == 6.0


def test_a_failed_round_trip_starts_the_count_again() -> None:
    hearing = Hearing(1.0)
    for second in range(10):
        hearing.reached(float(second))
    hearing.lost()
    assert hearing.continuous_for(10.0) == 0.0
    hearing.reached(20.0)  # back after a ten-second outage
    assert hearing.continuous_for(20.0) == 0.0
    hearing.reached(21.0)
    assert hearing.continuous_for(21.0) == 1.0


def test_a_gap_between_round_trips_is_a_break_even_without_an_error() -> None:
    # One call waited out an outage inside the retrier, or the process was paused: no pass
    # failed, but nothing was heard for twelve intervals.
    hearing = Hearing(1.0)
    for second in range(10):
        hearing.reached(float(second))
    hearing.reached(21.0)
    assert hearing.continuous_for(21.0) == 0.0


def test_contact_that_stopped_long_ago_counts_for_nothing_now() -> None:
    hearing = Hearing(1.0)
    for second in range(10):
        hearing.reached(float(second))
    assert hearing.continuous_for(30.0) == 0.0


def test_owner_tokens_of_this_process_are_marked_and_others_are_not() -> None:
    tokens = [heartbeat_owner_token() for _ in range(200)]
    assert len(set(tokens)) == 200
    assert all(is_heartbeat_owner_token(token) for token in tokens)
    assert all(token[14:18] == HEARTBEAT_OWNER_MARK for token in tokens)
    assert all(len(token) == 36 and token.count("-") == 4 for token in tokens)
    # The official SDKs write version-4 tokens; a missing token is nobody's heartbeat.
    assert not any(is_heartbeat_owner_token(random_uuid()) for _ in range(200))
    assert not is_heartbeat_owner_token(None)
