"""The pure arithmetic of retention: which bounds a collection walks with."""

from __future__ import annotations

import pytest

from dbos_trio import DBOSInvalidArgumentError, RetentionPolicy
from dbos_trio._core.retention import NOTHING, bounds, check_batch_size, check_keep_newest


def test_the_walk_is_bounded_by_the_larger_of_the_two_cutoffs() -> None:
    both = bounds(completed_before_ms=5_000, nth_newest_created_ms=9_000)
    assert (both.completed_before_ms, both.keep_before_ms, both.created_before_ms) == (
        5_000,
        9_000,
        9_000,
    )
    only_age = bounds(5_000, None)
    assert (only_age.keep_before_ms, only_age.created_before_ms) == (NOTHING, 5_000)
    assert bounds(None, None).empty
    assert not bounds(None, 1).empty


def test_a_policy_cutoff_is_its_age_before_now_and_never_negative() -> None:
    policy = RetentionPolicy(max_age_seconds=60)
    assert policy.completed_before_ms(1_000_000) == 940_000
    assert policy.completed_before_ms(10_000) == 0
    assert RetentionPolicy(keep_newest=5).completed_before_ms(1_000_000) is None


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_keep_newest_must_be_a_whole_number(bad: object) -> None:
    with pytest.raises(DBOSInvalidArgumentError, match="keep_newest"):
        check_keep_newest(bad, "keep_newest")


@pytest.mark.parametrize("bad", [0, 100_001, 2.0, None])
def test_a_batch_size_must_be_from_one_to_the_maximum(bad: object) -> None:
    with pytest.raises(DBOSInvalidArgumentError, match="batch_size"):
        check_batch_size(bad, "batch_size")
