"""Opening a backend from one options value: :meth:`BackendOptions.from_config` carries a
``Config``'s options to the backend :func:`open_system_database` opens — the schema it
migrates, the session settings of its pool, whether it migrates at all, group commit."""

from __future__ import annotations

import attrs
import pytest

from dbos_trio import Config, DBOSInitializationError
from dbos_trio._sysdb.open import BackendOptions, open_system_database
from dbos_trio._sysdb.postgres.backend import PostgresSystemDatabase
from dbos_trio._sysdb.retry import EXECUTOR_POLICY

from support.backends import connected

pytestmark = pytest.mark.postgres_only_module("schemas and session settings")


def test_options_from_a_config_carry_each_of_its_backend_options() -> None:
    config = Config(
        app_name="options",
        schema="elsewhere",
        max_connections=3,
        connect_timeout=4.0,
        run_migrations=False,
        use_listen_notify=False,
        notification_coalesce=0.5,
        direct_database_url="postgresql://postgres@127.0.0.1:5432/direct",
        prepared_statements=False,
        statement_timeout=7.0,
        idle_in_transaction_session_timeout=8.0,
        synchronous_commit="remote_apply",
        group_commit=False,
        database_retry_limit=9.0,
    )
    options = BackendOptions.from_config(config, recheck_interval=2.0)
    assert attrs.asdict(options, recurse=False) == {
        "schema": "elsewhere",
        "max_connections": 3,
        "connect_timeout": 4.0,
        "run_migrations": False,
        "use_listen_notify": False,
        "notification_coalesce": 0.5,
        "recheck_interval": 2.0,
        "retry": EXECUTOR_POLICY.bounded(9.0),
        "direct_url": "postgresql://postgres@127.0.0.1:5432/direct",
        "prepared_statements": False,
        "statement_timeout": 7.0,
        "idle_in_transaction_timeout": 8.0,
        "synchronous_commit": "remote_apply",
        "group_commit": False,
    }


async def test_options_from_a_config_open_the_schema_it_names_with_its_session_settings(
    dbos_url: str,
) -> None:
    config = Config(
        app_name="options",
        schema="options_schema",
        idle_in_transaction_session_timeout=42.0,
        group_commit=True,
    )
    sysdb = await open_system_database(dbos_url, BackendOptions.from_config(config))
    try:
        assert isinstance(sysdb, PostgresSystemDatabase)
        assert sysdb.step_commits is not None  # group commit is on
        async with sysdb.pool.connection() as conn:
            cur = await conn.execute("SHOW idle_in_transaction_session_timeout")
            assert await cur.fetchone() == ("42s",)
    finally:
        await sysdb.close()
    async with connected(dbos_url) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'options_schema' AND table_name = 'workflow_status'"
        )
        assert await cur.fetchone() == (1,)


async def test_options_from_a_config_that_does_not_migrate_refuse_a_schema_never_made(
    dbos_url: str,
) -> None:
    config = Config(app_name="options", schema="never_made", run_migrations=False)
    with pytest.raises(DBOSInitializationError):
        await open_system_database(dbos_url, BackendOptions.from_config(config))
    async with connected(dbos_url) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'never_made'"
        )
        assert await cur.fetchone() == (0,)
