"""A paused queue is stored in the shared ``queues`` row as a global concurrency of 0 or
below, holding its own limit negated: every SDK claims nothing from it, and unpausing
restores exactly the limit it had. Pure, no database."""

from __future__ import annotations

import pytest

from dbos_trio._core.admission import (
    QueueConfig,
    read_concurrency,
    stored_concurrency,
    validate_queue,
)
from dbos_trio._sysdb.rows import queue_config, queue_params


@pytest.mark.parametrize("limit", [None, 1, 7, 2**31 - 1])
def test_a_paused_queue_round_trips_through_its_concurrency_column(limit: int | None) -> None:
    paused = QueueConfig(name="q", global_concurrency=limit, paused=True)
    stored = stored_concurrency(paused)
    assert stored is not None and stored <= 0  # no SDK claims from it
    assert read_concurrency(stored) == (limit, True)
    running = QueueConfig(name="q", global_concurrency=limit)
    assert stored_concurrency(running) == limit
    assert read_concurrency(limit) == (limit, False)


def test_a_stored_row_reads_back_as_paused_with_its_limit_and_stays_valid() -> None:
    config = QueueConfig(name="q", global_concurrency=4, worker_concurrency=2, paused=True)
    params = queue_params(config, overwrite=True)
    assert params["concurrency"] == -4
    row = ("q", params["concurrency"], 2, None, None, None, None, None, None, 1.0, None)
    loaded = queue_config(row)
    assert loaded == config
    validate_queue(loaded)  # setters re-register it: still a valid queue
