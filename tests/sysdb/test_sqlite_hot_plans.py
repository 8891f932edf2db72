"""On SQLite, every statement a queue poll, a claim, a sweep or recovery runs uses an index.

SQLite uses a partial index only when the query's WHERE repeats the index's own terms: it
does not infer that ``status = 'ENQUEUED'`` implies ``status IN ('ENQUEUED', 'PENDING')``
(the in-flight index's condition), nor that a bare ``rate_limited`` is the rate-limited
index's ``rate_limited = TRUE``. The queue statements once left those implied, and every
poll and claim scanned the whole of ``workflow_status`` (G1 on SQLite,
``benchmarks/growth_sqlite.py``, showed the claim growing with the table). Each plan here
is read with ``EXPLAIN QUERY PLAN`` on a freshly migrated file, with and without
statistics (``ANALYZE`` of a loaded table), and must not scan a workflow table whole.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dbos_trio._sysdb.open import open_system_database
from dbos_trio._sysdb.sqlite.backend import sqlite_statements

# The statements on the executor's hot paths, and the index each must search.
HOT: dict[str, str] = {
    "has_claimable": "idx_workflow_status_in_flight_v2",
    "claim": "idx_workflow_status_in_flight_v2",
    "count_running": "idx_workflow_status_in_flight_v2",
    "count_recent_starts": "idx_workflow_status_rate_limited",
    "list_partitions": "idx_workflow_status_partition_dequeue_v3",
    "has_due_delayed": "idx_workflow_status_delayed",
    "has_expired": "idx_workflow_status_deadline",
    "sweep_timeouts": "idx_workflow_status_deadline",
    "pending_of_executor": "idx_workflow_status_pending",
    # Every census interval, and every few seconds with metrics on.
    "active_counts_all": "idx_workflow_status_in_flight_v2",
    "active_counts_of_application": "idx_workflow_status_in_flight_v2",
    "queue_depths": "idx_workflow_status_in_flight_v2",
    # The dashboard's overview, on every page load (no part may scan the table whole).
    "finished_per_minute": "idx_workflow_status_completed_at",
    "latency_ranks": "idx_workflow_status_completed_at",
    "queue_activity": "idx_workflow_status_started_at",
    "status_counts": "idx_workflow_status_in_flight_v2",
}
WHOLE_TABLE = re.compile(r"^SCAN (main\.)?(workflow_status|operation_outputs)$")


def params_for(sql: str) -> dict[str, Any]:
    values: dict[str, Any] = {name: 1 for name in re.findall(r":(\w+)", sql)}
    values.update(
        queue_name="q",
        workflow_names='["w"]',
        partition_key=None,
        executor_id="e",
        application_name="app",
        application_version="v1",
    )
    return {name: value for name, value in values.items() if f":{name}" in sql}


async def plans(path: Path, analyzed: bool) -> dict[str, list[str]]:
    sysdb = await open_system_database(f"sqlite:///{path}")
    await sysdb.close()
    statements = sqlite_statements()
    conn = sqlite3.connect(path)
    try:
        if analyzed:
            # A table of 20,000 finished rows, half of them once queued: the statistics a
            # grown file has, under which a scan can look cheaper than it is.
            conn.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
                "INSERT INTO workflow_status (workflow_uuid, status, name, created_at, "
                "updated_at, queue_name, rate_limited, started_at_epoch_ms) "
                "SELECT 'h' || i, 'SUCCESS', 'w', i, i, CASE WHEN i % 2 THEN 'q' END, "
                "i % 8 = 0, i FROM n"
            )
            conn.commit()
            conn.execute("ANALYZE")
        found = {}
        for name in HOT:
            sql = statements[name].text
            rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params_for(sql)).fetchall()
            found[name] = [row[3] for row in rows]
        return found
    finally:
        conn.close()


@pytest.mark.parametrize("analyzed", [False, True], ids=["fresh", "analyzed"])
async def test_the_hot_statements_search_their_index_and_scan_no_table_whole(
    tmp_path: Path, analyzed: bool
) -> None:
    found = await plans(tmp_path / "plans.sqlite", analyzed)
    for name, index in HOT.items():
        steps = found[name]
        assert not [step for step in steps if WHOLE_TABLE.match(step)], (name, steps)
        assert any(index in step for step in steps), (name, index, steps)
