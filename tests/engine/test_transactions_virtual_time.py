"""The serialization-retry schedule of transactions, on virtual time (SQLite datasource).

Another connection holds the SQLite write lock (as another process would) for five virtual
seconds; the transaction's attempts fail at once (busy) and are retried after the official
SDK's backoff — 1 ms, growing by 1.5, at most 2 s apart — until one gets the lock.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest
import trio
import trio.testing

from dbos_trio import DBOS, Config, SetWorkflowID, TransactionConnection
from dbos_trio._datasource.protocol import TRANSACTION_BACKOFF
from dbos_trio.testing import launched, sqlite_url

HELD_FOR = 5.0  # virtual seconds


def test_the_backoff_is_the_official_one() -> None:
    delays = [TRANSACTION_BACKOFF.delay(attempt) for attempt in range(30)]
    assert delays[:3] == pytest.approx([0.001, 0.0015, 0.00225])
    for before, after in itertools.pairwise(delays):
        assert after == pytest.approx(min(before * 1.5, 2.0))
    assert delays[-1] == 2.0


def attempts_until(released_at: float) -> int:
    """How many attempts the schedule makes until one starts after ``released_at``."""
    now, attempt = 0.0, 0
    while now < released_at:
        now += TRANSACTION_BACKOFF.delay(attempt)
        attempt += 1
    return attempt + 1


async def test_a_locked_sqlite_database_is_waited_out_on_the_backoff_schedule(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    app_path = tmp_path / "app.sqlite"
    dbos = DBOS(Config(app_name="tx-virtual", database_url=sqlite_url(tmp_path / "sys.sqlite")))
    ds = dbos.sqlite_datasource(sqlite_url(app_path))
    attempts: list[float] = []

    @ds.transaction(name="write")
    async def write(conn: TransactionConnection) -> int:
        attempts.append(trio.current_time())
        await conn.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
        return await conn.execute("INSERT INTO t VALUES (1)")

    @dbos.workflow()
    async def workflow() -> int:
        return await write()

    async with launched(dbos):
        other = sqlite3.connect(app_path, isolation_level=None, timeout=0)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        start = trio.current_time()
        async with trio.open_nursery() as nursery:

            async def release() -> None:
                await trio.sleep(HELD_FOR)
                other.execute("COMMIT")

            nursery.start_soon(release)
            with SetWorkflowID("locked"):
                assert await workflow() == 1
        waited = trio.current_time() - start
        other.close()
    # The function ran once (busy fails at BEGIN, before it); every failed BEGIN was retried.
    assert len(attempts) == 1
    assert ds.serialization_retries == attempts_until(HELD_FOR) - 1
    assert HELD_FOR <= waited < HELD_FOR + 2.0
