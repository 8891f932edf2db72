"""Benchmark R2 (``benchmarks/replay_queue.py``) does S4's work on every side of the queue.

R2's floor is pgbench running the engine's own claim, step and outcome statements as the
queue's workers; a floor whose claim found nothing (a wrong queue, version or name), or
whose fenced writes wrote nothing (an owner that does not match the claim's), would
measure no work at all and still report a rate. So each variant runs here on a fresh
system database and the rows are checked: every enqueued workflow SUCCESS, with its one
step and its output. The engine's variants also show that R1's replayed rows are rows
the engine can run (their inputs decode).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.backends import query

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.floor import pgbench_path  # noqa: E402
from benchmarks.replay_queue import (  # noqa: E402
    FLOOR_OWNER,
    run_dbos_trio,
    run_pgbench,
    worker_script,
)

pytestmark = pytest.mark.postgres_only_module("pgbench replays PostgreSQL statements")


@pytest.fixture
def needs_pgbench() -> None:
    try:
        pgbench_path()
    except FileNotFoundError as missing:
        pytest.skip(f"needs pgbench: {missing}")


def test_the_worker_script_claims_one_row_and_writes_only_if_it_got_one() -> None:
    script = worker_script(7)
    assert "%(" not in script and "%%" not in script
    claim, _, rest = script.partition("\\gset")
    assert "FOR UPDATE SKIP LOCKED" in claim and "1::int" in claim  # a budget of one row
    assert f"owner_xid = '{FLOOR_OWNER}'" in claim
    written, _, idle = rest.partition("\\else")
    assert written.count(":workflow_uuid") == 2  # the step (fenced by owner), the outcome
    assert "INSERT INTO" not in idle and "\\sleep 7 ms" in idle


async def workflows_done(url: str) -> tuple[dict[object, int], list[int], int]:
    statuses = {
        row[0]: int(row[1])
        for row in await query(url, "SELECT status, count(*) FROM {t}workflow_status GROUP BY 1")
    }
    steps = [
        int(row[0])
        for row in await query(
            url, "SELECT count(*) FROM {t}operation_outputs GROUP BY workflow_uuid"
        )
    ]
    outputs = await query(url, "SELECT count(*) FROM {t}workflow_output WHERE output IS NOT NULL")
    return statuses, steps, int(outputs[0][0])


async def test_the_pgbench_floor_runs_every_enqueued_workflow(
    system_database_url: str, needs_pgbench: None
) -> None:
    figures = run_pgbench(system_database_url, 12, 2, 1)  # (blocking: child processes)
    assert figures["completions_per_s"] > 0 and figures["enqueue_per_s"] > 0
    statuses, steps, outputs = await workflows_done(system_database_url)
    assert statuses == {"SUCCESS": 12}
    assert steps == [1] * 12 and outputs == 12


@pytest.mark.parametrize("enqueuer", ["pgbench", "bare trio", "dbos_trio"])
async def test_dbos_trios_workers_run_what_each_enqueuer_wrote(
    system_database_url: str, needs_pgbench: None, enqueuer: str
) -> None:
    figures = await run_dbos_trio(system_database_url, 10, enqueuer)
    assert figures["cpu_ms"] > 0 and figures["completions_per_s"] > 0
    statuses, steps, outputs = await workflows_done(system_database_url)
    assert statuses == {"SUCCESS": 20 + 10}  # the warm-up's 20 and the measured 10
    assert steps == [1] * 30 and outputs == 30
