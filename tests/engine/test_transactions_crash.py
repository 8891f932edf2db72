"""Exactly once under crash injection: a workflow of five transactions, each incrementing a
counter in the application database, killed at every checkpoint — after each one commits
and instead of each step row (its transaction committed, its row lost) — and recovered.

The system database is the kit's fresh SQLite file per run; the application database is
PostgreSQL or SQLite (reset for each run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbos_trio import DBOS, Config, Datasource, TransactionConnection
from dbos_trio.testing import CrashRecovery, crash_at_every_checkpoint, sqlite_url

from support.app_databases import datasource_for
from support.backends import run_blocking
from support.pg_support import fresh_database

TRANSACTIONS = 5


@pytest.fixture(params=["postgres", "sqlite"])
def crash_app_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield sqlite_url(tmp_path / "app.sqlite")
        return
    with fresh_database("crashapp") as url:
        yield url


def reset(url: str) -> None:
    run_blocking(url, "DROP TABLE IF EXISTS counters")
    run_blocking(url, "CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    for counter_id in range(1, TRANSACTIONS + 1):
        run_blocking(url, "INSERT INTO counters VALUES (%s, 0)", counter_id)


async def test_each_transaction_commits_exactly_once_whatever_checkpoint_the_crash_hit(
    crash_app_url: str,
) -> None:
    calls: Counter[int] = Counter()
    datasources: list[Datasource] = []

    def build(config: Config) -> DBOS:
        reset(crash_app_url)  # and a fresh system database, from the kit
        calls.clear()
        dbos = DBOS(config)
        ds = datasource_for(dbos, crash_app_url)
        datasources.append(ds)

        @ds.transaction(name="increment")
        async def increment(conn: TransactionConnection, counter_id: int) -> int:
            calls[counter_id] += 1
            await conn.execute("UPDATE counters SET n = n + 1 WHERE id = %s", (counter_id,))
            return int(
                await conn.fetch_value("SELECT n FROM counters WHERE id = %s", (counter_id,))
            )

        @dbos.workflow(name="five_transactions")
        async def five_transactions() -> list[int]:
            return [await increment(i) for i in range(1, TRANSACTIONS + 1)]

        dbos.five_transactions = five_transactions  # type: ignore[attr-defined]
        return dbos

    async def start(dbos: DBOS) -> None:
        await dbos.start_workflow(dbos.five_transactions)  # type: ignore[attr-defined]

    def check(report: CrashRecovery) -> None:
        where = f"{report.crashed_at} (before: {report.crashed_before})"
        assert (report.status, report.result) == ("SUCCESS", [1] * TRANSACTIONS), where
        counters = run_blocking(crash_app_url, "SELECT id, n FROM counters ORDER BY id")
        assert counters == [(i, 1) for i in range(1, TRANSACTIONS + 1)], where
        # Not even rolled-back attempts: each function body ran once.
        assert calls == Counter(range(1, TRANSACTIONS + 1)), where
        # A transaction whose step row was lost was replayed from its checkpoint row.
        lost_row = report.crashed_before and report.crashed_at.kind == "step"
        assert datasources[-1].replayed == (1 if lost_row else 0), where
        leftover = run_blocking(crash_app_url, "SELECT count(*) FROM {t}datasource_outputs")
        assert leftover == [(0,)], where  # dropped when the workflow finished

    reports = await crash_at_every_checkpoint(
        build, start, check, before_steps=True, workflow_id="five-tx", app_name="tx-crash"
    )
    kinds = Counter((r.crashed_at.kind, r.crashed_before) for r in reports)
    assert kinds == Counter(
        {
            ("start", False): 1,
            ("step", False): 5,
            ("step", True): 5,
            ("outcome", False): 1,
            ("outcome", True): 1,
        }
    )
