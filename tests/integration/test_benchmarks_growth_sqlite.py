"""G1 on SQLite (``benchmarks/growth_sqlite.py``) grows the history it claims to.

The figures at 1M rows mean something only if the loader made the rows G1 describes: the
same ids as the PostgreSQL loader (so ``get_workflow_status`` probes hit), the statuses,
queues and steps in their proportions, and a recovery probe's rows counted and removed.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import growth_load  # noqa: E402
from benchmarks.growth_sqlite import SQLITE, grow  # noqa: E402


def test_the_sqlite_history_has_the_postgres_loaders_rows_and_probe_rows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'g.sqlite'}"
    trio.run(growth_load.migrate, url)
    now_ms = int(time.time() * 1000)
    t0 = growth_load.history_start(now_ms)
    grow(url, 0, 60, 2, t0)
    grow(url, 60, 100, 2, t0)  # grown in place, as G1 does between sizes
    conn = sqlite3.connect(tmp_path / "g.sqlite")
    try:
        statuses = dict(conn.execute("SELECT status, count(*) FROM workflow_status GROUP BY 1"))
        assert statuses == {"SUCCESS": 90, "ERROR": 8, "CANCELLED": 2}
        ids = {row[0] for row in conn.execute("SELECT workflow_uuid FROM workflow_status")}
        assert ids == {growth_load.history_id(i) for i in range(1, 101)}
        queued = conn.execute(
            "SELECT count(*) FROM workflow_status WHERE queue_name = ?", ("growth_q",)
        )
        assert queued.fetchone()[0] == 50
        steps = conn.execute(
            "SELECT count(DISTINCT workflow_uuid), count(*) FROM operation_outputs"
        )
        assert steps.fetchone() == (100, 200)
        ((low, high),) = conn.execute(
            "SELECT min(created_at), max(created_at) FROM workflow_status"
        )
        assert t0 <= low < high < t0 + growth_load.SPAN_MS
    finally:
        conn.close()
    SQLITE.insert_pending(url, 7, "t", now_ms)
    assert SQLITE.in_flight(url) == 7
    assert SQLITE.recovered(url, "t") == 0
    assert SQLITE.delete_recovered(url, "t") == 7
    assert SQLITE.in_flight(url) == 0
