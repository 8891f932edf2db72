"""``Config(synchronous_commit=...)`` reaches every connection, and doctor can read it back.

On PostgreSQL the setting is one ``SET`` per new connection; ``replication_state`` reads what
a session of the executor's pool sees (and the standbys streaming from the server: none on
the test server). SQLite has no replication to report.
"""

from __future__ import annotations

from collections.abc import Callable

from dbos_trio import DBOS

from support.backends import backend_of


async def test_the_synchronous_commit_setting_is_what_the_executors_sessions_run_with(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos(synchronous_commit="remote_apply")
    async with dbos.launched():
        executor = dbos._slot.executor
        assert executor is not None
        state = await executor.sysdb.replication_state()
    if backend_of(dbos_url) == "sqlite":
        assert state is None
        return
    assert state is not None
    assert state.synchronous_commit == "remote_apply"
    assert state.standbys == ()  # a single test server: nothing streams from it


async def test_without_the_setting_the_servers_own_is_kept(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos = make_dbos()
    async with dbos.launched():
        executor = dbos._slot.executor
        assert executor is not None
        state = await executor.sysdb.replication_state()
    if backend_of(dbos_url) == "postgres":
        assert state is not None and state.synchronous_commit == "on"
