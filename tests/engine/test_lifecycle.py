"""Launch and shutdown through the public API: ``DBOS(Config(...))``, ``dbos.launched()``,
``nursery.start(dbos.serve)``.

What is proven here: launch order (validate → identity → connect → migrate/verify →
register the version → start the nursery) and its mirror at exit (cancel and await every
task *before* the pool closes); relaunching; several instances in one process; errors that
name what went wrong (and never a password); exceptions leaving ``launched()`` as
themselves; logging without handlers.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import trio
from psycopg.conninfo import make_conninfo

from dbos_trio import (
    DBOS,
    Config,
    DBOSConfigError,
    DBOSException,
    DBOSInitializationError,
    DBOSNotLaunchedError,
)
from dbos_trio._pg import connecting, pool
from dbos_trio._sysdb.postgres import backend

from support.backends import migrate_postgres, query
from support.pg_support import as_url, fresh_database
from support.waiting import HANG_GUARD

PASSWORD = "s3cr3t-Pa55word"


@pytest.fixture(scope="module")
def migrated_url() -> Iterator[str]:
    """One database for the module, migrated once (schema ``dbos``)."""
    with fresh_database("lifecycle") as url:
        trio.run(migrate_postgres, url)
        yield url


@pytest.fixture
def database_url(migrated_url: str) -> str:
    return migrated_url


def unique_app() -> str:
    return f"app-{uuid.uuid4().hex[:10]}"


def unique_version(label: str = "v") -> str:
    """Version names are unique across applications in one schema (the retiring global
    UNIQUE on ``version_name``), so tests sharing a database never reuse one."""
    return f"{label}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A listening TCP socket that takes connections into its backlog and never says a
    word (the test counts the attempts by accepting them afterwards)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        yield listening


def attempts_on(listening: socket.socket) -> int:
    """How many connections reached ``listening``'s backlog (each accepted and closed)."""
    listening.setblocking(False)
    count = 0
    while True:
        try:
            accepted, _ = listening.accept()
        except BlockingIOError:
            return count
        accepted.close()
        count += 1


# ------------------------------------------------------------------ launch and shutdown


async def test_a_background_task_cancelled_at_exit_still_finds_the_pool_open(
    database_url: str,
) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )
    observed: dict[str, Any] = {}
    running = trio.Event()

    async with dbos.launched():
        executor = dbos._slot.executor
        assert executor is not None
        system_pool = executor.sysdb.pool  # type: ignore[attr-defined]

        async def background() -> None:
            try:
                running.set()
                await trio.sleep_forever()
            except trio.Cancelled:
                observed["pool closed when cancelled"] = system_pool.closed
                with trio.CancelScope(shield=True):
                    # A cancelled task's cleanup may still need the database.
                    async with system_pool.connection() as conn:
                        cur = await conn.execute("SELECT 'cleanup ran'")
                        observed["cleanup query"] = (await cur.fetchone())[0]
                raise
            finally:
                observed["finished"] = True

        executor.spawn(background)
        await running.wait()

    assert observed == {
        "pool closed when cancelled": False,
        "cleanup query": "cleanup ran",
        "finished": True,
    }
    assert system_pool.closed


async def test_launch_registers_the_application_version(database_url: str) -> None:
    app = unique_app()
    version = unique_version("v-registered")
    dbos = DBOS(Config(app_name=app, database_url=database_url, app_version=version))

    async with dbos.launched():
        assert dbos.is_launched
        assert dbos.app_version == version
        registered = await query(
            database_url,
            "SELECT version_name FROM dbos.application_versions WHERE application_name = %s",
            app,
        )

    assert registered == [(version,)]


async def test_relaunching_an_older_version_warns_that_it_is_not_the_latest(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = unique_app()
    older, newer = unique_version("old"), unique_version("new")
    for version in (older, newer):
        async with DBOS(
            Config(app_name=app, database_url=database_url, app_version=version)
        ).launched():
            pass
    caplog.clear()

    with caplog.at_level(logging.INFO, logger="dbos_trio"):
        async with DBOS(
            Config(app_name=app, database_url=database_url, app_version=older)
        ).launched():
            pass

    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert older in warnings[0].getMessage() and app in warnings[0].getMessage()
    assert "not the latest" in warnings[0].getMessage()


async def test_verify_only_launch_against_an_empty_database_fails_and_creates_nothing(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    dbos = DBOS(Config(app_name=unique_app(), database_url=url, run_migrations=False))

    with pytest.raises(DBOSInitializationError) as raised:
        async with dbos.launched():
            raise AssertionError("launch should have failed")

    message = str(raised.value)
    assert "'dbos'" in message and "migrat" in message
    assert not dbos.is_launched
    created = await query(
        url,
        "SELECT n.nspname FROM pg_namespace n"
        " WHERE n.nspname NOT LIKE 'pg\\_%%' AND n.nspname NOT IN ('information_schema', 'public')",
    )
    assert created == []
    tables = await query(
        url,
        "SELECT schemaname, tablename FROM pg_tables"
        " WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
    )
    assert tables == []


async def test_verify_only_launch_against_a_migrated_database_works(database_url: str) -> None:
    dbos = DBOS(Config(app_name=unique_app(), database_url=database_url, run_migrations=False))

    async with dbos.launched():
        assert dbos.is_launched


async def test_two_instances_in_one_process_against_two_schemas_do_not_interfere(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    alpha = DBOS(Config(app_name="alpha-app", database_url=url, schema="alpha", app_version="va"))
    beta = DBOS(Config(app_name="beta-app", database_url=url, schema="beta", app_version="vb"))

    @alpha.workflow(name="greet")
    async def greet_alpha(name: str) -> str:
        return f"alpha greets {name}"

    @beta.workflow(name="greet")
    async def greet_beta(name: str) -> str:
        return f"beta greets {name}"

    async with alpha.launched(), beta.launched():
        assert alpha.executor_id == beta.executor_id == "local"
        assert await greet_alpha("ann") == "alpha greets ann"
        assert await greet_beta("bob") == "beta greets bob"
        alpha_versions = await query(url, "SELECT version_name FROM alpha.application_versions")
        beta_versions = await query(url, "SELECT version_name FROM beta.application_versions")
        alpha_runs = await query(url, "SELECT name, application_version FROM alpha.workflow_status")
        beta_runs = await query(url, "SELECT name, application_version FROM beta.workflow_status")

    assert alpha_versions == [("va",)]
    assert beta_versions == [("vb",)]
    assert alpha_runs == [("greet", "va")]
    assert beta_runs == [("greet", "vb")]


async def test_relaunching_one_instance_works_and_the_registry_is_frozen_only_while_launched(
    database_url: str,
) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )

    @dbos.workflow()
    async def first() -> int:
        return 1

    async with dbos.launched():
        assert await first() == 1
        with pytest.raises(DBOSException, match="launched"):

            @dbos.workflow()
            async def too_late() -> int:
                return 2

        with pytest.raises(DBOSException, match="launched"):

            @dbos.step()
            async def also_too_late() -> int:
                return 3

    assert not dbos.is_launched

    @dbos.workflow()
    async def second() -> int:
        return 2

    async with dbos.launched():
        assert dbos.is_launched
        assert await first() == 1
        assert await second() == 2
    assert not dbos.is_launched


async def test_launching_an_instance_that_is_already_launched_fails(database_url: str) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )

    async with dbos.launched():
        with pytest.raises(DBOSException, match="already launched"):
            async with dbos.launched():
                pass
        assert dbos.is_launched


async def test_launching_one_instance_from_two_tasks_at_once_refuses_the_second(
    database_url: str,
) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )
    refused: list[DBOSException] = []
    launched = 0
    both_tried = trio.Event()

    async def launch() -> None:
        nonlocal launched
        try:
            async with dbos.launched():
                launched += 1
                await both_tried.wait()
        except DBOSException as error:
            refused.append(error)
            both_tried.set()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(launch)
            nursery.start_soon(launch)
            await trio.sleep(1)
            both_tried.set()

    assert launched == 1
    assert len(refused) == 1 and "already launched" in str(refused[0])


async def test_a_launch_cancelled_from_outside_shuts_down_and_can_launch_again(
    database_url: str,
) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )

    with trio.move_on_after(0.2) as scope:
        async with dbos.launched():
            await trio.sleep_forever()

    assert scope.cancelled_caught
    assert not dbos.is_launched
    async with dbos.launched():
        assert dbos.is_launched


async def test_after_exit_no_connection_of_the_instance_is_left_on_the_server(
    database_url: str,
) -> None:
    name = f"lifecycle_{uuid.uuid4().hex[:8]}"
    url = database_url + f"?application_name={name}"
    dbos = DBOS(Config(app_name=unique_app(), database_url=url, app_version=unique_version()))

    async def count() -> int:
        found = await query(
            database_url,
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            name,
        )
        return int(found[0][0])

    async with dbos.launched():
        assert await count() >= 1

    with trio.fail_after(HANG_GUARD):
        while True:
            if await count() == 0:
                break
            await trio.sleep(0.01)  # the server notices closed sockets a moment later


# ---------------------------------------------------------------------- failed launches


async def test_an_invalid_config_fails_before_anything_connects(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[str] = []

    async def no_connecting(*args: Any, **kwargs: Any) -> Any:
        attempts.append("connect")
        raise AssertionError("nothing may connect")

    for module in (connecting, pool, backend):  # every module that binds connect
        monkeypatch.setattr(module, "connect", no_connecting)

    with pytest.raises(DBOSConfigError, match=r"Config\.max_connections"):
        DBOS(Config(app_name="valid-name", database_url=database_url, max_connections=0))
    with pytest.raises(DBOSConfigError, match=r"Config\.app_name"):
        DBOS(Config(app_name="Not Valid", database_url=database_url))
    with pytest.raises(TypeError, match="Config"):
        DBOS({"app_name": "valid-name"})  # type: ignore[arg-type]

    assert attempts == []


async def test_an_unreachable_database_fails_launch_with_a_clear_error_within_the_connect_timeout(
    database_url: str, silent_server: socket.socket
) -> None:
    host, port = silent_server.getsockname()
    url = f"postgresql://postgres:{PASSWORD}@{host}:{port}/nowhere"
    dbos = DBOS(Config(app_name=unique_app(), database_url=url, connect_timeout=0.5))

    with trio.fail_after(HANG_GUARD), pytest.raises(DBOSInitializationError) as raised:
        async with dbos.launched():
            raise AssertionError("launch should have failed")

    # One attempt, given up at its connect timeout: not retried, not waited on for ever.
    assert attempts_on(silent_server) == 1
    message = str(raised.value)
    assert "connect" in message and "timeout" in message, message
    assert PASSWORD not in message
    assert not dbos.is_launched

    @dbos.workflow()
    async def still_registrable() -> None:
        """The failed launch thawed the registry."""


async def test_a_refused_connection_fails_launch_at_once_without_showing_the_password() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        host, port = probe.getsockname()
    url = f"postgresql://postgres:{PASSWORD}@{host}:{port}/nowhere"
    # Within the guard, from a ten-minute connect timeout: the refusal ended the launch.
    dbos = DBOS(Config(app_name=unique_app(), database_url=url, connect_timeout=10 * HANG_GUARD))

    with trio.fail_after(HANG_GUARD), pytest.raises(DBOSInitializationError) as raised:
        async with dbos.launched():
            pass

    assert "connect" in str(raised.value)
    assert PASSWORD not in str(raised.value)
    assert PASSWORD not in repr(raised.value)


async def test_an_unsupported_url_from_the_environment_fails_launch_naming_it_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A URL from the environment is not seen by Config's validators: launch checks it.
    monkeypatch.setenv("DBOS_SYSTEM_DATABASE_URL", f"mysql://root:{PASSWORD}@db.example.com/app")
    dbos = DBOS(Config(app_name=unique_app()))

    with pytest.raises(DBOSInitializationError) as raised:
        async with dbos.launched():
            raise AssertionError("launch should have failed")

    assert "mysql://root:***@db.example.com/app" in str(raised.value)
    assert PASSWORD not in str(raised.value)
    assert not dbos.is_launched


# --------------------------------------------------------------------- secrets and logs


async def test_repr_and_logs_never_show_the_url_password(
    migrated_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Trust authentication ignores the password, so this URL connects.
    url = as_url(make_conninfo(migrated_url, password=PASSWORD))
    config = Config(app_name=unique_app(), database_url=url, app_version=unique_version())
    dbos = DBOS(config)

    @dbos.workflow()
    async def hello(who: str) -> str:
        return f"hello {who}"

    with caplog.at_level(logging.DEBUG):
        assert PASSWORD not in repr(dbos)
        async with dbos.launched():
            assert PASSWORD not in repr(dbos)
            assert await hello("you") == "hello you"
        assert PASSWORD not in repr(dbos)

    assert PASSWORD not in repr(config) and PASSWORD not in str(config)
    assert "***" in repr(config)
    assert caplog.records, "launch and shutdown should have logged"
    for record in caplog.records:
        assert PASSWORD not in record.getMessage()
        assert PASSWORD not in repr(record.args)
    assert PASSWORD not in caplog.text


async def test_launch_and_shutdown_are_logged_at_info_naming_app_version_and_executor(
    database_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBOS__VMID", "vm-logged")
    app = unique_app()
    version = unique_version("v-logged")
    dbos = DBOS(Config(app_name=app, database_url=database_url, app_version=version))

    with caplog.at_level(logging.INFO, logger="dbos_trio"):
        async with dbos.launched():
            assert dbos.executor_id == "vm-logged"
            launched = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
        shut_down = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]

    launch_line = [m for m in launched if "launched" in m]
    assert len(launch_line) == 1
    assert app in launch_line[0] and version in launch_line[0] and "vm-logged" in launch_line[0]
    assert "re-enqueued" in launch_line[0]
    shutdown_line = [m for m in shut_down[len(launched) :] if "shut down" in m]
    assert len(shutdown_line) == 1
    assert app in shutdown_line[0] and "vm-logged" in shutdown_line[0]
    assert all(r.name.startswith("dbos_trio") for r in caplog.records)


async def test_the_shutdown_log_line_names_the_version_too(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    version = unique_version("v-bye")
    dbos = DBOS(Config(app_name=unique_app(), database_url=database_url, app_version=version))

    with caplog.at_level(logging.INFO, logger="dbos_trio"):
        async with dbos.launched():
            pass

    shutdown = [r.getMessage() for r in caplog.records if "shut down" in r.getMessage()]
    assert shutdown and version in shutdown[0]


def test_the_library_installs_no_log_handlers() -> None:
    import dbos_trio._sysdb.postgres.backend
    import dbos_trio._sysdb.postgres.listener  # noqa: F401

    names = ["dbos_trio"] + [
        name for name in logging.Logger.manager.loggerDict if name.startswith("dbos_trio.")
    ]
    for name in names:
        assert logging.getLogger(name).handlers == [], name
    assert logging.getLogger("dbos_trio").handlers == []


# ----------------------------------------------------------------- exceptions at exit


async def test_an_exception_raised_inside_launched_propagates_as_itself(
    database_url: str,
) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )
    error = ValueError("from the user's block")

    with pytest.raises(ValueError) as raised:
        async with dbos.launched():
            raise error

    assert raised.value is error
    assert not dbos.is_launched


async def test_keyboard_interrupt_raised_inside_launched_propagates_as_itself(
    database_url: str,
) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )

    with pytest.raises(KeyboardInterrupt) as raised:
        async with dbos.launched():
            raise KeyboardInterrupt

    assert type(raised.value) is KeyboardInterrupt
    assert not dbos.is_launched


async def test_a_multi_error_group_raised_inside_launched_stays_a_group(
    database_url: str,
) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )

    with pytest.raises(ExceptionGroup) as raised:
        async with dbos.launched():
            raise ExceptionGroup("two failures", [ValueError("a"), KeyError("b")])

    leaves = [type(e) for e in raised.value.exceptions]
    # Possibly nested inside the nursery's own group; both errors are in there either way.
    flat = raised.value.subgroup(lambda e: not isinstance(e, BaseExceptionGroup))
    assert flat is not None
    assert {type(e) for e in _leaves(flat)} == {ValueError, KeyError}
    assert leaves


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            found.extend(_leaves(error))
        else:
            found.append(error)
    return found


async def test_an_exception_raised_inside_launched_keeps_its_cause(database_url: str) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )
    cause = KeyError("the original problem")

    with pytest.raises(ValueError) as raised:
        async with dbos.launched():
            raise ValueError("wrapped") from cause

    assert raised.value.__cause__ is cause


# ---------------------------------------------------------------------- serve and errors


async def test_serve_reports_started_after_launch_and_runs_until_cancelled(
    database_url: str,
) -> None:
    app = unique_app()
    version = unique_version("v-served")
    dbos = DBOS(Config(app_name=app, database_url=database_url, app_version=version))

    async with trio.open_nursery() as nursery:
        await nursery.start(dbos.serve)
        assert dbos.is_launched
        assert dbos.app_version == version
        registered = await query(
            database_url,
            "SELECT version_name FROM dbos.application_versions WHERE application_name = %s",
            app,
        )
        assert registered == [(version,)]
        nursery.cancel_scope.cancel()

    assert not dbos.is_launched


async def test_operations_before_launch_raise_not_launched_naming_the_operation(
    database_url: str,
) -> None:
    dbos = DBOS(Config(app_name=unique_app(), database_url=database_url))

    @dbos.workflow(name="checkout")
    async def checkout() -> None:
        pass

    with pytest.raises(DBOSNotLaunchedError, match="start_workflow") as raised:
        await dbos.start_workflow(checkout)
    assert raised.value.operation == "start_workflow"
    with pytest.raises(DBOSNotLaunchedError, match="checkout"):
        await checkout()
    with pytest.raises(DBOSNotLaunchedError, match="retrieve_workflow"):
        await dbos.retrieve_workflow("wf-1")
    with pytest.raises(DBOSNotLaunchedError, match="executor_id"):
        _ = dbos.executor_id
    with pytest.raises(DBOSNotLaunchedError, match="app_version"):
        _ = dbos.app_version
    assert dbos.app_name == dbos.config.app_name
    assert not dbos.is_launched


async def test_operations_after_shutdown_raise_not_launched(database_url: str) -> None:
    dbos = DBOS(
        Config(app_name=unique_app(), database_url=database_url, app_version=unique_version())
    )
    async with dbos.launched():
        pass

    with pytest.raises(DBOSNotLaunchedError, match="get_workflow_status"):
        await dbos.get_workflow_status("wf-1")
