"""Behind PgBouncer in transaction-pooling mode: workflows, queues, messages and timeouts.

Transaction pooling hands each transaction to any server connection, so nothing may
rely on a session: server-side prepared statements are off
(``Config(prepared_statements=False)``; PgBouncer 1.18 does not support them), and what
needs a session — the migration lock and LISTEN — goes to the server directly
(``Config(direct_database_url=...)``), or LISTEN is off (``use_listen_notify=False``, with
the database migrated beforehand). The proxy fronts a throwaway cluster of the test's
own. Skipped where ``pgbouncer`` is not installed (``.ci/run`` installs it with apt).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from chaos.cluster import Cluster, available, pgbouncer, pgbouncer_available  # noqa: E402
from dbos_trio import (  # noqa: E402  # noqa: E402
    DBOS,
    Client,
    Config,
    DBOSAwaitedWorkflowCancelledError,
    EnqueueOptions,
    SetWorkflowID,
    SetWorkflowTimeout,
)
from dbos_trio._sysdb.wakeups import queue_key  # noqa: E402

from support.time_fixtures import running, until_waiting  # noqa: E402
from support.waiting import HANG_GUARD, wait_until  # noqa: E402

_WHY = available() or pgbouncer_available()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(_WHY is not None, reason=f"{_WHY}")]


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[Cluster, str]]:
    with Cluster.create() as cluster, pgbouncer(cluster) as url:
        yield cluster, url


def app(name: str, config: dict[str, Any]) -> tuple[DBOS, Any]:
    dbos = DBOS(Config(app_name=name, app_version=f"{name}-1", prepared_statements=False, **config))
    queue = dbos.register_queue(f"jobs-{name}", worker_concurrency=4, global_concurrency=8)

    @dbos.step()
    async def double(x: int) -> int:
        return 2 * x

    @dbos.workflow()
    async def job(x: int) -> int:
        return await double(x) + 1

    @dbos.workflow()
    async def inbox() -> Any:
        await dbos.set_event("ready", True)
        return await dbos.recv("t", timeout_seconds=30)

    @dbos.workflow()
    async def forever() -> None:
        await dbos.sleep(3600)

    return dbos, (queue, job, inbox, forever)


async def exercise(dbos: DBOS, parts: Any) -> None:
    queue, job, inbox, forever = parts
    async with dbos.launched():
        assert await job(1) == 3
        handles = [await queue.enqueue(job, i) for i in range(20)]
        assert [await h.get_result() for h in handles] == [2 * i + 1 for i in range(20)]
        with SetWorkflowID(f"inbox-{dbos.app_name}"):
            receiver = await dbos.start_workflow(inbox)
        assert await dbos.get_event(receiver.workflow_id, "ready", timeout_seconds=30)
        await dbos.send(receiver.workflow_id, "hello", "t")
        assert await receiver.get_result() == "hello"
        with SetWorkflowTimeout(0.5):
            bounded = await dbos.start_workflow(forever)
        with trio.fail_after(30), pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await bounded.get_result()


async def test_everything_runs_behind_pgbouncer_with_a_direct_url_for_sessions(
    proxied: tuple[Cluster, str],
) -> None:
    cluster, url = proxied
    dbos, parts = app("behind-bouncer", {"database_url": url, "direct_database_url": cluster.url()})
    await exercise(dbos, parts)


async def test_everything_runs_behind_pgbouncer_without_listen_notify(
    proxied: tuple[Cluster, str],
) -> None:
    cluster, url = proxied
    # Migrated directly first; the launch through the proxy only verifies.
    migrator = DBOS(Config(app_name="migrator", database_url=cluster.url()))
    async with migrator.launched():
        pass
    dbos, parts = app(
        "no-listen",
        {"database_url": url, "use_listen_notify": False, "run_migrations": False},
    )
    await exercise(dbos, parts)


async def test_listen_through_the_pooler_is_detected_and_named_once(
    proxied: tuple[Cluster, str], caplog: pytest.LogCaptureFixture
) -> None:
    # LISTEN through a transaction pooler is accepted and never delivers: the executor fell
    # back to polling without a word.
    caplog.set_level(logging.WARNING, logger="dbos_trio")
    cluster, url = proxied
    migrator = DBOS(Config(app_name="migrator", database_url=cluster.url()))
    async with migrator.launched():
        pass
    dbos, _parts = app("listen-through", {"database_url": url, "run_migrations": False})
    async with dbos.launched():
        await wait_until(
            lambda: any("LISTEN does not deliver" in r.getMessage() for r in caplog.records),
            timeout=30,
            what="the listener's warning",
        )
    warnings = [
        r.getMessage() for r in caplog.records if "LISTEN does not deliver" in r.getMessage()
    ]
    assert len(warnings) == 1
    assert "direct_database_url" in warnings[0] and "use_listen_notify=False" in warnings[0]


async def test_an_enqueue_through_the_pooler_wakes_a_worker_listening_directly(
    proxied: tuple[Cluster, str], wakeup_waits: list[tuple[str, float]]
) -> None:
    # The worker's queue is polled once an hour: only the enqueue's NOTIFY (sent through
    # the pooler, delivered to the LISTEN on the direct connection) starts it in time.
    cluster, url = proxied
    dbos = DBOS(
        Config(
            app_name="woken",
            database_url=url,
            direct_database_url=cluster.url(),
            prepared_statements=False,
        )
    )
    dbos.register_queue("woken-q", polling_interval_sec=3600)

    @dbos.workflow(name="woken.double")
    async def double(x: int) -> int:
        return 2 * x

    async with running(dbos):  # once the listener's self-test came back
        await until_waiting(wakeup_waits, queue_key("woken-q"))  # its first claim is done
        async with Client(url, app_name="woken", prepared_statements=False) as client:
            options = EnqueueOptions(workflow_name="woken.double", queue_name="woken-q")
            handle = await client.enqueue(options, 21)
            with trio.fail_after(HANG_GUARD):
                assert await handle.get_result() == 42
