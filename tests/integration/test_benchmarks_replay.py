"""The statement floor of benchmark R1 (``benchmarks/replay.py``) does the engine's work.

pgbench replays the engine's own statements with the parameters inlined; a floor whose
fenced writes silently wrote nothing (an owner token that does not match, a step that
finds no row) would be a floor of no work. So the replayed workloads run here, through
pgbench, on a fresh system database, and the rows they leave are checked: every replayed
workflow finished with all its steps, every replayed enqueue left an ENQUEUED row.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from support.backends import query

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.floor import pgbench_path  # noqa: E402
from benchmarks.replay import (  # noqa: E402
    QUEUE,
    pgbench_statement,
    replay,
    replay_bare_trio,
    replay_psycopg,
    replay_trio_driver,
    workload_script,
)

pytestmark = pytest.mark.postgres_only_module("pgbench replays PostgreSQL statements")


def test_a_statement_becomes_a_pgbench_command_with_literals_and_the_id_variable() -> None:
    text = "-- a comment\nSELECT %(workflow_id)s, %(name)s, %(n)s, %(none)s, 100%%"
    command = pgbench_statement(text, {"name": "it's", "n": 3, "none": None})
    assert command == "SELECT ('r' || :id), 'it''s', 3, NULL, 100%;"
    script = workload_script(3)
    assert script.count(";\n") == 3 + 2  # init, three steps, the outcome
    assert "%(" not in script


async def test_the_replayed_workloads_leave_what_the_engine_would(
    system_database_url: str,
) -> None:
    try:
        pgbench_path()
    except FileNotFoundError as missing:
        pytest.skip(f"needs pgbench: {missing}")
    url = system_database_url
    figures = replay(url, 2, 5)
    assert figures["per_s"] > 0 and figures["latency_ms_median"] > 0
    replay(url, None, 4)  # (blocking: pgbench runs as a child process)

    finished = await query_rows(url, "SELECT status, count(*) FROM {t}workflow_status GROUP BY 1")
    assert finished == {"SUCCESS": 5, "ENQUEUED": 4}
    steps = await query_rows(
        url, "SELECT workflow_uuid, count(*) FROM {t}operation_outputs GROUP BY 1"
    )
    assert sorted(steps.values()) == [2] * 5
    queued = await query_rows(
        url,
        "SELECT queue_name, count(*) FROM {t}workflow_status WHERE status = 'ENQUEUED' GROUP BY 1",
    )
    assert queued == {QUEUE: 4}
    inputs = await query_rows(url, "SELECT 'inputs', count(*) FROM {t}workflow_input GROUP BY 1")
    assert inputs == {"inputs": 9}


async def test_the_python_floors_do_the_engines_work_too(system_database_url: str) -> None:
    """psycopg, libpq by hand on Trio, and the driver alone each leave, per replayed
    workflow, a finished row with its steps (and per enqueue an ENQUEUED row)."""
    url = system_database_url
    figures = [
        await trio.to_thread.run_sync(replay_psycopg, url, 2, 3, 1),
        await replay_bare_trio(url, 2, 3, 1),
        await replay_trio_driver(url, 2, 3, 1),
        await replay_bare_trio(url, None, 2, 0),
    ]
    assert all(f["per_s"] > 0 and f["cpu_ms"] > 0 for f in figures)
    finished = await query_rows(url, "SELECT status, count(*) FROM {t}workflow_status GROUP BY 1")
    assert finished == {"SUCCESS": 3 * 4, "ENQUEUED": 2}
    steps = await query_rows(
        url, "SELECT workflow_uuid, count(*) FROM {t}operation_outputs GROUP BY 1"
    )
    assert sorted(steps.values()) == [2] * 12


async def query_rows(url: str, sql: str) -> dict[object, int]:
    return {row[0]: int(row[1]) for row in await query(url, sql)}


def test_a_list_parameter_becomes_a_text_array_literal() -> None:
    # (The claim's workflow_names: each element double-quoted, its quotes and backslashes
    # escaped for the array syntax, then the whole quoted as a string literal.)
    command = pgbench_statement("SELECT %(names)s", {"names": ["wf", 'a"b', "c\\d", "it's"]})
    assert command == """SELECT '{"wf","a\\"b","c\\\\d","it''s"}';"""
