"""How soon a queue worker claims again, from what its last claim found (engine/dequeue.py).

Pure: the rows found and the free slots the claim had decide the pause.
"""

from __future__ import annotations

import pytest

from dbos_trio._engine.runtime.dequeue import (
    CLAIM_SPACING_SECONDS,
    CLAIM_WINDOW_SECONDS,
    claim_pause,
)


@pytest.mark.parametrize(("found", "budget"), [(0, 5), (1, 5), (0, None), (1, None), (1, 1)])
def test_one_row_or_none_claims_again_at_once(found: int, budget: int | None) -> None:
    assert claim_pause(found, budget) == 0.0  # a caller enqueueing one at a time never waits


@pytest.mark.parametrize(("found", "budget"), [(5, 5), (2, 2)])
def test_a_claim_that_filled_every_free_slot_spaces_the_next_briefly(
    found: int, budget: int
) -> None:
    assert claim_pause(found, budget) == CLAIM_SPACING_SECONDS


@pytest.mark.parametrize(("found", "budget"), [(2, 50), (49, 50), (3, None)])
def test_several_rows_trickling_in_wait_out_the_window(found: int, budget: int | None) -> None:
    assert claim_pause(found, budget) == CLAIM_WINDOW_SECONDS
    assert CLAIM_WINDOW_SECONDS > CLAIM_SPACING_SECONDS


@pytest.mark.parametrize(("found", "budget", "capacity"), [(1, 1, 16), (1, 1, 2), (3, 3, 16)])
def test_refilling_one_freed_slot_of_a_busy_worker_spaces_the_next_claim(
    found: int, budget: int, capacity: int
) -> None:
    # A backlog drained at concurrency 16 had made half its claims for a single freed slot.
    assert claim_pause(found, budget, capacity) == CLAIM_SPACING_SECONDS


def test_a_worker_of_one_slot_claims_again_at_once() -> None:
    assert claim_pause(1, 1, 1) == 0.0  # one workflow at a time, each waited for
