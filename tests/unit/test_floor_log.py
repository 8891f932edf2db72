"""The floor's pgbench log parsing (``benchmarks.floor.logged_latencies``): latencies as
logged, or, when a single client's log holds a zero latency no commit can take, the
spacing of its transactions' end times."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.floor import logged_latencies  # noqa: E402

# client_id transaction_no time_us script_no epoch_s epoch_us
GOOD = "0 1 324 0 1796156564 83048\n0 2 131 0 1796156564 83192\n0 3 87 0 1796156564 83283\n"
ZEROS = "0 1 0 0 1796156564 999800\n0 2 0 0 1796156565 000100\n0 3 250 0 1796156565 000400\n"


def test_logged_latencies_are_read_as_seconds() -> None:
    assert logged_latencies(GOOD, 1) == pytest.approx([324e-6, 131e-6, 87e-6])


def test_a_single_clients_zero_latencies_give_way_to_the_spacing_of_its_end_times() -> None:
    # 999800 µs -> 100 µs of the next second -> 400 µs: 300 µs apart, twice.
    assert logged_latencies(ZEROS, 1) == pytest.approx([300e-6, 300e-6])


def test_several_clients_logs_are_taken_as_logged() -> None:
    # Their transactions overlap, so end times say nothing about one transaction's length.
    assert logged_latencies(ZEROS, 8) == pytest.approx([0.0, 0.0, 250e-6])
