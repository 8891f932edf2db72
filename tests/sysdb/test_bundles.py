"""Workflow bundles: every row of a workflow (and its children) exported, and imported into
a fresh database of either backend with every value as stored.

A parent workflow records steps, a child, a message it consumed, an event set twice (two
history rows) and a stream; its bundle (with ``children``) goes through JSON text, as a
file would, into a fresh SQLite and a fresh PostgreSQL database, where each table's rows
of both workflows equal the source's. An import over existing ids is refused and writes
nothing; with ``overwrite`` it replaces them. Malformed documents are refused before
anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dbos_trio import DBOS, Client, DBOSException, SetWorkflowID
from dbos_trio._ops import bundles
from dbos_trio.testing import check_upgrade, read_bundle

from support.backends import _fresh_database, query
from support.bundle_rows import rows_of
from support.waiting import HANG_GUARD


def build(make_dbos: Callable[..., DBOS]) -> tuple[DBOS, Any]:
    dbos = make_dbos()

    @dbos.step(name="label")
    async def label(x: int) -> dict[str, Any]:
        return {"x": x, "text": "ünïcode ✓"}

    @dbos.workflow(name="kid")
    async def kid(x: int) -> int:
        return x * 3

    @dbos.workflow(name="parent")
    async def parent(x: int) -> list[Any]:
        first = await label(x)
        tripled = await kid(x)
        await dbos.set_event("stage", "one")
        await dbos.set_event("stage", "two")
        await dbos.write_stream("log", "line 1")
        message = await dbos.recv("go", timeout_seconds=HANG_GUARD)
        return [first, tripled, message]

    return dbos, parent


async def test_a_bundle_with_children_imports_every_row_as_stored_into_either_backend(
    make_dbos: Callable[..., DBOS],
    dbos_url: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    postgres_template: str,  # made before the test's Trio run: the targets copy them
    sqlite_template: Path,
) -> None:
    dbos, parent = build(make_dbos)
    async with dbos.launched():
        with SetWorkflowID("p"):
            handle = await dbos.start_workflow(parent, 4)
        await dbos.send("p", {"go": True}, "go")
        assert await handle.get_result() == [{"x": 4, "text": "ünïcode ✓"}, 12, {"go": True}]
    async with Client(dbos_url, use_listen_notify=False) as client:
        alone = await bundles.export_workflows(client._reach, ["p"])
        document = await bundles.export_workflows(client._reach, ["p"], children=True)
        with pytest.raises(DBOSException, match="nope"):
            await bundles.export_workflows(client._reach, ["p", "nope"])
    assert [w["status"]["workflow_uuid"] for w in alone["workflows"]] == ["p"]
    ids = tuple(w["status"]["workflow_uuid"] for w in document["workflows"])
    assert ids == ("p", "p-2")
    document = json.loads(json.dumps(document))  # as a file carries it
    source = await rows_of(dbos_url, ids)
    assert len(source["workflow_events_history"]) == 2 and source["notifications"]
    for target in ("sqlite", "postgres"):
        (tmp_path / target).mkdir()
        with _fresh_database(target, request, tmp_path / target) as url:
            async with Client(url, use_listen_notify=False) as client:
                written = await bundles.import_bundle(client._reach, document)
                assert written == ["p", "p-2"]
                assert await rows_of(url, ids) == source, target
                with pytest.raises(DBOSException, match="p, p-2 already exist"):
                    await bundles.import_bundle(client._reach, document)
                await query(url, "DELETE FROM {t}workflow_events WHERE workflow_uuid = 'p'")
                await bundles.import_bundle(client._reach, document, overwrite=True)
                assert await rows_of(url, ids) == source, target


async def test_malformed_bundles_are_refused_before_anything_is_written(dbos_url: str) -> None:
    good_status = {"workflow_uuid": "w", "status": "SUCCESS", "name": "n"}
    cases = [
        ({"format": "other"}, "not a workflow bundle"),
        ({"format": bundles.BUNDLE_FORMAT, "version": 9, "workflows": []}, "version 9"),
        ({"format": bundles.BUNDLE_FORMAT, "version": 1, "workflows": {}}, "must be a list"),
        (
            {
                "format": bundles.BUNDLE_FORMAT,
                "version": 1,
                "workflows": [{"status": good_status}, {"status": good_status}],
            },
            "appears twice",
        ),
        (
            {
                "format": bundles.BUNDLE_FORMAT,
                "version": 1,
                "workflows": [{"status": good_status, "steps": "x"}],
            },
            "'steps' must be a list",
        ),
    ]
    async with Client(dbos_url, use_listen_notify=False) as client:
        for document, problem in cases:
            with pytest.raises(DBOSException, match=problem):
                await bundles.import_bundle(client._reach, document)
        assert await client.list_workflows() == []


async def test_a_bundle_replays_with_no_database(
    make_dbos: Callable[..., DBOS], dbos_url: str, tmp_path: Path
) -> None:
    dbos, parent = build(make_dbos)
    async with dbos.launched():
        with SetWorkflowID("p"):
            handle = await dbos.start_workflow(parent, 1)
        await dbos.send("p", "go", "go")
        await handle.get_result()
    async with Client(dbos_url, use_listen_notify=False) as client:
        document = await bundles.export_workflows(client._reach, ["p"], children=True)
    path = tmp_path / "b.json"
    path.write_text(json.dumps(document))
    fresh, _ = build(make_dbos)
    report = await check_upgrade(fresh, histories=read_bundle(str(path)))
    assert {r.workflow_id: r.verdict for r in report.results} == {
        "p": "compatible",
        "p-2": "compatible",
    }
