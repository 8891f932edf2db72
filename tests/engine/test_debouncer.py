"""The debouncer under virtual time (SQLite, the testing kit): coalescing, the timeout cap,
two executors bouncing one key, the rows, options refused, and replay from a workflow.

``background_interval=1`` keeps the release of due DELAYED rows on its one-second sweep,
so a debounced workflow starts within a virtual second of its delay.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSException,
    DBOSQueueDeduplicatedError,
    EnqueueOptions,
    SetEnqueueOptions,
)
from dbos_trio.testing import CrashRecovery, crash_at_every_checkpoint, launched, sqlite_url

APP = "debounce-virtual"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return sqlite_url(tmp_path / "system.sqlite")


class App:
    """A DBOS with a workflow ``collect(value)`` that records each run's argument."""

    def __init__(self, url: str, **config: Any) -> None:
        self.dbos = DBOS(Config(app_name=APP, database_url=url, app_version="v1", **config))
        self.runs: list[tuple[str, Any, float]] = []
        dbos = self.dbos

        @dbos.workflow(name="collect")
        async def collect(value: Any) -> Any:
            assert dbos.workflow_id is not None
            self.runs.append((dbos.workflow_id, value, trio.current_time()))
            return value

        self.collect = collect


def row(url: str, workflow_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(url[len("sqlite:///") :])
    conn.row_factory = sqlite3.Row
    try:
        found = conn.execute(
            "SELECT status, deduplication_id, is_debounced, debounce_deadline_epoch_ms, "
            "delay_until_epoch_ms, queue_name, created_at FROM workflow_status "
            "WHERE workflow_uuid = ?",
            (workflow_id,),
        ).fetchone()
        return dict(found)
    finally:
        conn.close()


async def test_a_hundred_bounces_in_a_second_run_one_workflow_once_with_the_last_arguments(
    autojump_clock: trio.testing.MockClock, url: str
) -> None:
    app = App(url)
    debouncer = app.dbos.debouncer(app.collect)
    async with launched(app.dbos, background_interval=1):
        handles = []
        for i in range(100):
            handles.append(await debouncer.debounce("user-7", 2.0, i))
            await trio.sleep(0.01)
        last_bounce = trio.current_time()
        waiting = row(url, handles[0].workflow_id)
        assert await handles[-1].get_result() == 99
        done = row(url, handles[0].workflow_id)
    assert len({h.workflow_id for h in handles}) == 1
    assert [(value, n) for value, n in Counter(v for _, v, _ in app.runs).items()] == [(99, 1)]
    # The row is the official SDK's while it waits, and frees its key once released.
    assert waiting["status"] == "DELAYED" and waiting["is_debounced"] == 1
    assert waiting["deduplication_id"] == "collect-user-7"
    assert waiting["queue_name"] == "_dbos_internal_queue"
    assert waiting["debounce_deadline_epoch_ms"] is None
    assert done["status"] == "SUCCESS" and done["deduplication_id"] is None
    # It started once the period passed after the last bounce (within the 1 s sweep).
    started_at = app.runs[0][2]
    assert last_bounce + 2.0 - 0.01 <= started_at <= last_bounce + 2.0 + 1.1


async def test_the_timeout_caps_the_delay_from_the_first_call(
    autojump_clock: trio.testing.MockClock, url: str
) -> None:
    app = App(url)
    debouncer = app.dbos.debouncer(app.collect, debounce_timeout_sec=12.0)
    async with launched(app.dbos, background_interval=1):
        start = trio.current_time()
        handles = []
        for i in range(30):  # a bounce every second, each within the 5 s period
            handles.append(await debouncer.debounce("k", 5.0, i))
            await trio.sleep(1.0)
        first = row(url, handles[0].workflow_id)
        await trio.sleep(20)
    ids = list(dict.fromkeys(h.workflow_id for h in handles))
    assert len(ids) == 3  # a new workflow after each deadline: 0-12 s, 13-25 s, 26-29 s
    assert first["debounce_deadline_epoch_ms"] == first["created_at"] + 12_000
    assert first["delay_until_epoch_ms"] == first["debounce_deadline_epoch_ms"]
    runs = {workflow_id: (value, at - start) for workflow_id, value, at in app.runs}
    assert len(app.runs) == 3
    value, at = runs[ids[0]]
    assert 12.0 <= at <= 13.1 and value in (11, 12)  # the last bounce before the deadline
    assert runs[ids[-1]][0] == 29


async def test_two_executors_bouncing_one_key_coalesce_onto_one_workflow(
    autojump_clock: trio.testing.MockClock, url: str
) -> None:
    a, b = App(url, executor_id="a"), App(url, executor_id="b")
    ids: list[str] = []

    async def bounce(app: App, offset: float, label: str) -> None:
        debouncer = app.dbos.debouncer(app.collect)
        await trio.sleep(offset)
        for i in range(50):
            ids.append((await debouncer.debounce("shared", 1.0, f"{label}{i}")).workflow_id)
            await trio.sleep(0.02)

    async with launched(a.dbos, background_interval=1), launched(b.dbos, background_interval=1):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(bounce, a, 0.0, "a")
            nursery.start_soon(bounce, b, 0.01, "b")
        await trio.sleep(5)
    assert len(ids) == 100 and len(set(ids)) == 1
    assert [value for _, value, _ in a.runs + b.runs] == ["b49"]  # once, the last bounce's


async def test_a_client_and_an_executor_coalesce_on_one_key(
    autojump_clock: trio.testing.MockClock, url: str
) -> None:
    app = App(url)
    async with launched(app.dbos, background_interval=1), Client(url, app_name=APP) as client:
        from_executor = await app.dbos.debouncer(app.collect).debounce("mixed", 3.0, "executor")
        remote = client.debouncer(
            EnqueueOptions(workflow_name="collect", queue_name="_dbos_internal_queue")
        )
        from_client = await remote.debounce("mixed", 3.0, "client")
        assert await from_client.get_result() == "client"
    assert from_executor.workflow_id == from_client.workflow_id
    assert [value for _, value, _ in app.runs] == ["client"]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"deduplication_id": "mine"}, "deduplication_id"),
        ({"priority": 3}, "priority"),
        ({"delay_seconds": 1.0}, "delay_seconds"),
        ({"queue_partition_key": "p"}, "queue_partition_key"),
        ({"deduplication_id": "d", "duplication_policy": "return-existing"}, "deduplication_id"),
    ],
)
async def test_options_a_debounce_owns_are_refused_before_anything_is_written(
    url: str, options: dict[str, Any], match: str
) -> None:
    app = App(url)
    debouncer = app.dbos.debouncer(app.collect)
    async with launched(app.dbos):
        with SetEnqueueOptions(**options), pytest.raises(DBOSException, match=match):
            await debouncer.debounce("k", 1.0, 1)
        async with Client(url) as client:
            with pytest.raises(DBOSException, match=match):
                client.debouncer(EnqueueOptions(workflow_name="collect", queue_name="q", **options))
        listed = await app.dbos.list_workflows()
    assert listed == []


async def test_bad_arguments_and_foreign_holders_are_refused(url: str) -> None:
    app = App(url)
    queue = app.dbos.register_queue("work")

    class Box:
        @app.dbos.workflow(name="Box.method")
        async def method(self, value: Any) -> None:
            pass

    with pytest.raises(TypeError, match="not methods"):
        app.dbos.debouncer(Box().method)
    with pytest.raises(DBOSException, match="debounce_timeout_sec"):
        app.dbos.debouncer(app.collect, debounce_timeout_sec=-1)
    async with launched(app.dbos):
        with pytest.raises(DBOSException, match="debounce_period_sec"):
            await app.dbos.debouncer(app.collect).debounce("k", float("nan"), 1)
        with pytest.raises(DBOSException, match="Invalid queue name provided to debouncer"):
            await app.dbos.debouncer(app.collect, queue="nowhere").debounce("k", 1.0, 1)
        # The key's deduplication id is held by a plain enqueue: not ours to push back.
        with SetEnqueueOptions(deduplication_id="collect-held", delay_seconds=60):
            plain = await queue.enqueue(app.collect, "plain")
        with pytest.raises(DBOSQueueDeduplicatedError) as held:
            await app.dbos.debouncer(app.collect, queue=queue).debounce("held", 1.0, "x")
        assert held.value.workflow_id == plain.workflow_id
        listed = await app.dbos.list_workflows()
    assert [w.workflow_id for w in listed] == [plain.workflow_id]


async def test_a_debounce_from_a_workflow_is_replayed_never_repeated_after_a_crash(
    autojump_clock: trio.testing.MockClock,
) -> None:
    apps: list[App] = []

    def build(config: Config) -> DBOS:
        app = App(config.resolved_database_url())
        debouncer = app.dbos.debouncer(app.collect)

        @app.dbos.workflow(name="parent")
        async def parent() -> list[str]:
            first = await debouncer.debounce("in-workflow", 30.0, "first")
            second = await debouncer.debounce("in-workflow", 30.0, "second")
            return [first.workflow_id, second.workflow_id]

        app.parent = parent  # type: ignore[attr-defined]
        apps.append(app)
        return app.dbos

    async def start(dbos: DBOS) -> None:
        await dbos.start_workflow(apps[-1].parent)  # type: ignore[attr-defined]

    async def check(report: CrashRecovery) -> None:
        assert report.status == "SUCCESS"
        first, second = report.result
        assert first == second
        debounced = await report.dbos.list_workflows(name="collect")
        assert [w.workflow_id for w in debounced] == [first]  # one, never enqueued twice
        steps = await report.dbos.list_workflow_steps(report.workflow_id)
        assert [s.function_name for s in steps] == [
            "DBOS.debounce_delayed_workflow",
            "collect",
            "DBOS.debounce_delayed_workflow",
        ]
        assert (await report.dbos.get_workflow_status(first)).input == {  # type: ignore[union-attr]
            "args": ("second",),
            "kwargs": {},
        }

    reports = await crash_at_every_checkpoint(build, start, check)
    # The fresh enqueue is a child start (step 2); the bounces commit with their checkpoint.
    assert [(r.crashed_at.kind, r.crashed_at.function_id) for r in reports] == [
        ("start", None),
        ("child", 2),
        ("outcome", None),
        ("outcome", None),
    ]
