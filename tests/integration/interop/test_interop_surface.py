"""Issue 17 between dbos_trio and the official ``dbos`` 3.4, on one PostgreSQL database.

The official side runs in its own virtualenv as a subprocess
(``official/surface_driver.py``):

1. attributes dbos_trio writes are found by the official client's attribute filter, and
   a merge the official client makes is what dbos_trio then reads;
2. a workflow dbos_trio ran is rewound by the official client and re-run by dbos_trio,
   then rewound by dbos_trio; the official client reads the final result and steps;
3. messages dbos_trio sends with ``send_bulk`` are received, and the results read by the
   official client; messages the official client sends with ``send_bulk`` are received
   by dbos_trio workflows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from interop_support import run_official

from dbos_trio import DBOS, Config, SendMessage, SetWorkflowAttributes, SetWorkflowID

pytestmark = pytest.mark.interop

APP = "trio-surface-interop"
DRIVER = Path(__file__).resolve().parent / "official" / "surface_driver.py"


class App:
    """The dbos_trio side: its workflows, and how often each step ran."""

    def __init__(self, dbos: DBOS, runs: dict[str, int], **workflows: Any) -> None:
        self.dbos, self.runs, self.workflows = dbos, runs, workflows


def make_app(url: str) -> App:
    dbos = DBOS(Config(app_name=APP, database_url=url, app_version="v1"))
    runs = {"first": 0, "second": 0}

    @dbos.step(name="surface_first")
    async def first() -> int:
        runs["first"] += 1
        return runs["first"]

    @dbos.step(name="surface_second")
    async def second() -> int:
        runs["second"] += 1
        return runs["second"]

    @dbos.workflow(name="surface_story", serialization="portable")
    async def story() -> dict[str, int]:
        a = await first()
        await dbos.set_event("progress", "half")
        b = await second()
        return {"first": a, "second": b}

    @dbos.workflow(name="surface_inbox", serialization="portable")
    async def inbox(count: int) -> list[object]:
        return [await dbos.recv("bulk", timeout_seconds=30) for _ in range(count)]

    @dbos.workflow(name="surface_noop", serialization="portable")
    async def noop() -> None:
        return None

    return App(dbos, runs, story=story, inbox=inbox, noop=noop)


async def official(python: Path, *args: str) -> object:
    return await run_official(python, *args, driver=DRIVER)


async def test_attributes_round_trip_between_the_sdks(url: str, official_python: Path) -> None:
    app = make_app(url)
    dbos, noop = app.dbos, app.workflows["noop"]
    async with dbos.launched():
        for workflow_id, attributes in (
            ("attr-a", {"tenant": "acme", "tier": 1}),
            ("attr-b", {"tenant": "acme", "tier": 2}),
            ("attr-c", {"tenant": "other"}),
        ):
            with SetWorkflowAttributes(attributes), SetWorkflowID(workflow_id):
                await noop()
        listed = await official(
            official_python, "list-attributes", url, APP, json.dumps({"tenant": "acme"})
        )
        assert listed == [
            ["attr-a", {"tenant": "acme", "tier": 1}],
            ["attr-b", {"tenant": "acme", "tier": 2}],
        ]
        await official(official_python, "merge-attributes", url, "attr-c", json.dumps({"tier": 3}))
        status = await dbos.get_workflow_status("attr-c")
        assert status is not None and status.attributes == {"tenant": "other", "tier": 3}
        found = await dbos.list_workflows(attributes={"tier": 3})
        assert [s.workflow_id for s in found] == ["attr-c"]


async def test_rewinds_by_either_sdk_rerun_and_read_back(url: str, official_python: Path) -> None:
    app = make_app(url)
    dbos, runs, story = app.dbos, app.runs, app.workflows["story"]
    async with dbos.launched():
        with SetWorkflowID("story-1"):
            assert await story() == {"first": 1, "second": 1}
        assert await official(official_python, "rewind", url, "story-1", "3") == {
            "rewound": "story-1"
        }
        handle = await dbos.retrieve_workflow("story-1")
        assert await handle.get_result() == {"first": 1, "second": 2}
        await dbos.rewind_workflow("story-1", start_step=1)
        assert await handle.get_result() == {"first": 2, "second": 3}
    read = await official(official_python, "outcome", url, "story-1")
    assert read == {
        "result": {"first": 2, "second": 3},
        "steps": [[1, "surface_first"], [2, "DBOS.setEvent"], [3, "surface_second"]],
        "status": "SUCCESS",
    }
    assert runs == {"first": 2, "second": 3}


async def test_bulk_sends_cross_between_the_sdks(url: str, official_python: Path) -> None:
    app = make_app(url)
    dbos, inbox = app.dbos, app.workflows["inbox"]
    async with dbos.launched():
        with SetWorkflowID("inbox-1"):
            first = await dbos.start_workflow(inbox, 2)
        with SetWorkflowID("inbox-2"):
            await dbos.start_workflow(inbox, 2)
        await dbos.send_bulk(
            [
                SendMessage(destination_id="inbox-1", message={"n": 1}, topic="bulk"),
                SendMessage(destination_id="inbox-2", message={"n": 2}, topic="bulk"),
            ],
            serialization="portable",
        )
        sent = await official(
            official_python,
            "send-bulk",
            url,
            json.dumps([["inbox-1", "bulk", "py-1"], ["inbox-2", "bulk", "py-2"]]),
        )
        assert sent == {"sent": 2}
        assert await first.get_result() == [{"n": 1}, "py-1"]
    read = await official(official_python, "outcome", url, "inbox-2")
    assert isinstance(read, dict)
    assert read["result"] == [{"n": 2}, "py-2"]
