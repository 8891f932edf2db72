"""Connection tuning on PostgreSQL: ``statement_timeout`` bounds listing queries (a clear
:class:`DBOSQueryTimeoutError`), ``idle_in_transaction_session_timeout`` is set on every
connection of the pool and the listener, and workflow statements carry no timeout.

The slow listing is made real: another connection holds an exclusive lock on
``workflow_status``, so the listing waits until the server cancels it. A transaction can
also ask for generic plans (the counted claim does), local to it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import trio

from dbos_trio import DBOS, Client, DBOSConfigError, DBOSQueryTimeoutError, SystemDatabaseError
from dbos_trio._sysdb.open import open_system_database
from dbos_trio._sysdb.postgres.backend import RETRY_POLICY, PostgresSystemDatabase
from dbos_trio._sysdb.postgres.statements import PostgresStatements
from dbos_trio._sysdb.retry import Retrier
from dbos_trio._sysdb.statements import Statement, Transaction

from support.backends import connected
from support.time_fixtures import executor_of

pytestmark = pytest.mark.postgres_only_module("statement and session timeouts")


async def show(conn: object, setting: str) -> str:
    cur = await conn.execute(f"SHOW {setting}")  # type: ignore[attr-defined]
    row = await cur.fetchone()
    return str(row[0])


async def test_a_listing_past_its_statement_timeout_raises_a_query_timeout_error(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos(statement_timeout=0.3)

    @dbos.workflow()
    async def quick() -> str:
        return "ok"

    async with dbos.launched():
        assert await quick() == "ok"
        assert len(await dbos.list_workflows()) == 1
        async with connected(dbos_url, autocommit=False) as blocker:
            await blocker.execute("LOCK TABLE dbos.workflow_status IN ACCESS EXCLUSIVE MODE")
            with trio.fail_after(30), pytest.raises(DBOSQueryTimeoutError) as raised:
                await dbos.list_workflows()
            assert isinstance(raised.value, SystemDatabaseError)
            assert "statement timeout" in str(raised.value)
            await blocker.execute("ROLLBACK")
        # The limit ended with the listing's transaction: the pooled connections carry
        # none, and the next listing works.
        sysdb = executor_of(dbos).sysdb
        assert isinstance(sysdb, PostgresSystemDatabase)
        async with sysdb.pool.connection() as conn:
            assert await show(conn, "statement_timeout") == "0"
        assert len(await dbos.list_workflows()) == 1


async def test_every_connection_of_the_pool_and_the_listener_has_the_idle_transaction_timeout(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos(idle_in_transaction_session_timeout=7, direct_database_url=dbos_url)
    async with dbos.launched():
        sysdb = executor_of(dbos).sysdb
        assert isinstance(sysdb, PostgresSystemDatabase)
        async with sysdb.pool.connection() as first, sysdb.pool.connection() as second:
            assert await show(first, "idle_in_transaction_session_timeout") == "7s"
            assert await show(second, "idle_in_transaction_session_timeout") == "7s"
        assert sysdb.listener is not None
        listener_conn = await sysdb.listener._connect()
        try:
            assert await show(listener_conn, "idle_in_transaction_session_timeout") == "7s"
        finally:
            await listener_conn.close()
    async with Client(dbos_url, idle_in_transaction_session_timeout=None) as client:
        runtime = client._require("test")
        assert isinstance(runtime.sysdb, PostgresSystemDatabase)
        async with runtime.sysdb.pool.connection() as conn:
            assert await show(conn, "idle_in_transaction_session_timeout") == "0"


async def test_bad_timeouts_are_refused_before_anything_connects(dbos_url: str) -> None:
    from dbos_trio import Config

    for field in ("statement_timeout", "idle_in_transaction_session_timeout"):
        for bad in (0, -1, float("inf"), "5"):
            with pytest.raises(DBOSConfigError, match=field):
                Config(app_name="tuning", **{field: bad})
            with pytest.raises(DBOSConfigError, match=field):
                Client(dbos_url, **{field: bad})


async def test_a_transaction_asking_for_generic_plans_has_them_and_only_it(dbos_url: str) -> None:
    """The counted claim's transaction (``generic_plans=True``) runs with
    ``plan_cache_mode = force_generic_plan``; the setting is local to it, so the next
    transaction on the pool is back to the server's default."""
    sysdb = await open_system_database(dbos_url)
    try:
        assert isinstance(sysdb, PostgresSystemDatabase)
        mode = Statement("mode", ("SELECT current_setting('plan_cache_mode')",), writes=False)
        statements = PostgresStatements(
            sysdb.pool, {"mode": mode}, Retrier(RETRY_POLICY, scrub=sysdb.pool.scrub)
        )

        async def current_mode(tx: Transaction) -> str:
            row = await tx.one("mode", {})
            assert row is not None
            return str(row[0])

        generic = await statements.transaction(
            current_mode, isolation="REPEATABLE READ", generic_plans=True
        )
        assert generic == "force_generic_plan"
        assert await statements.transaction(current_mode, isolation="REPEATABLE READ") == "auto"
    finally:
        await sysdb.close()
