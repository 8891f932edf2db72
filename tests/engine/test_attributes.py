"""Workflow attributes and the id reuse policy, on both backends.

``SetWorkflowAttributes`` / ``EnqueueOptions(attributes=...)`` store a JSON object in
``workflow_status.attributes``; ``update_workflow_attributes`` replaces or merges it;
``list_workflows(attributes=...)`` finds rows by containment (JSONB ``@>`` on
PostgreSQL, ``json_each`` on SQLite). ``workflow_id_reuse_policy="reject"`` refuses an id
that exists. Each test asserts what a user sees: listings, statuses and raised errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from dbos_trio import (
    DBOS,
    DBOSArgumentTypeError,
    DBOSException,
    DBOSInvalidArgumentError,
    DBOSWorkflowIDInUseError,
    SetWorkflowAttributes,
    SetWorkflowID,
)
from dbos_trio._client import Client, EnqueueOptions

from support.backends import status_row

MakeDBOS = Callable[..., DBOS]


def stored(row: dict[str, Any]) -> Any:
    raw = row["attributes"]
    return json.loads(raw) if isinstance(raw, str) else raw


async def test_attributes_set_around_a_start_are_stored_listed_and_not_inherited(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def child() -> str:
        return "child"

    @dbos.workflow()
    async def parent() -> str:
        with SetWorkflowID("attrs-child"):
            return await child()

    async with dbos.launched():
        with SetWorkflowAttributes({"tenant": "acme", "tier": 2}), SetWorkflowID("attrs-1"):
            assert await parent() == "child"
        status = await dbos.get_workflow_status("attrs-1")
        assert status is not None and status.attributes == {"tenant": "acme", "tier": 2}
        child_status = await dbos.get_workflow_status("attrs-child")
        assert child_status is not None and child_status.attributes is None
        listed = await dbos.list_workflows(workflow_ids=["attrs-1"])
        assert listed[0].attributes == {"tenant": "acme", "tier": 2}
    assert stored(await status_row(dbos_url, "attrs-1")) == {"tenant": "acme", "tier": 2}


async def test_listing_by_attributes_keeps_the_rows_that_contain_them(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def noop() -> None:
        return None

    rows = {
        "a": {"tenant": "acme", "tier": 2, "vip": True, "tags": ["x", "y"]},
        "b": {"tenant": "acme", "tier": 2.0, "vip": False, "note": None},
        "c": {"tenant": "other", "tier": "2"},
        "d": None,
    }
    async with dbos.launched():
        for workflow_id, attributes in rows.items():
            with SetWorkflowAttributes(attributes), SetWorkflowID(workflow_id):
                await noop()

        async def ids(**attributes: Any) -> list[str]:
            found = await dbos.list_workflows(attributes=attributes)
            return [status.workflow_id for status in found]

        assert await ids(tenant="acme") == ["a", "b"]
        assert await ids(tenant="acme", tier=2) == ["a", "b"]  # 2 and 2.0 are one number
        assert await ids(tier="2") == ["c"]  # a string is not a number
        assert await ids(vip=True) == ["a"]
        assert await ids(vip=False) == ["b"]
        assert await ids(note=None) == ["b"]
        assert await ids(tags=["x", "y"]) == ["a"]
        assert await ids(tenant="nobody") == []
        assert await ids() == ["a", "b", "c"]  # every object contains {}; NULL does not
        with pytest.raises(DBOSArgumentTypeError, match="attributes"):
            await dbos.list_workflows(attributes={"when": object()})


async def test_update_workflow_attributes_replaces_merges_and_clears(make_dbos: MakeDBOS) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def noop() -> None:
        return None

    async def attributes_of(workflow_id: str) -> Any:
        status = await dbos.get_workflow_status(workflow_id)
        assert status is not None
        return status.attributes

    async with dbos.launched():
        with SetWorkflowAttributes({"a": 1, "b": {"deep": True}}), SetWorkflowID("upd"):
            await noop()
        await dbos.update_workflow_attributes("upd", {"b": "flat", "c": [1, "two"]}, merge=True)
        assert await attributes_of("upd") == {"a": 1, "b": "flat", "c": [1, "two"]}
        await dbos.update_workflow_attributes("upd", {"t": True, "f": False, "n": None}, merge=True)
        assert await attributes_of("upd") == {
            "a": 1, "b": "flat", "c": [1, "two"], "t": True, "f": False, "n": None,
        }  # fmt: skip
        await dbos.update_workflow_attributes("upd", {"only": "this"})
        assert await attributes_of("upd") == {"only": "this"}
        await dbos.update_workflow_attributes("upd", None)
        assert await attributes_of("upd") is None
        await dbos.update_workflow_attributes("upd", {"from": "nothing"}, merge=True)
        assert await attributes_of("upd") == {"from": "nothing"}
        with pytest.raises(DBOSException, match="Cannot merge None"):
            await dbos.update_workflow_attributes("upd", None, merge=True)
        with pytest.raises(DBOSArgumentTypeError, match="JSON"):
            await dbos.update_workflow_attributes("upd", {"bad": {1, 2}})
        assert await attributes_of("upd") == {"from": "nothing"}
        # A missing workflow is left alone, as dbos 3.4 does.
        await dbos.update_workflow_attributes("no-such-workflow", {"x": 1})


async def test_update_workflow_attributes_in_a_workflow_is_one_checkpoint(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def tagger(target: str) -> None:
        await dbos.update_workflow_attributes(target, {"tagged": True}, merge=True)

    async with dbos.launched():
        with SetWorkflowID("tag-target"):
            await tagger("tag-target")
        steps = await dbos.list_workflow_steps("tag-target")
        assert [(s.function_id, s.function_name) for s in steps] == [
            (1, "DBOS.updateWorkflowAttributes")
        ]
        status = await dbos.get_workflow_status("tag-target")
        assert status is not None and status.attributes == {"tagged": True}


def test_bad_attributes_are_refused_when_the_block_is_entered() -> None:
    with pytest.raises(DBOSArgumentTypeError, match="dict"):
        SetWorkflowAttributes(["not", "a", "dict"]).__enter__()  # type: ignore[arg-type]
    with pytest.raises(DBOSArgumentTypeError, match="keys must be str"):
        SetWorkflowAttributes({1: "x"}).__enter__()  # type: ignore[dict-item]
    with (
        pytest.raises(DBOSArgumentTypeError, match="JSON"),
        SetWorkflowAttributes({"nan": float("nan")}),
    ):
        pass
    with pytest.raises(DBOSArgumentTypeError, match="attributes"):
        EnqueueOptions(workflow_name="w", queue_name="q", attributes={"x": b"bytes"})
    with pytest.raises(DBOSException, match="workflow_id_reuse_policy"):
        EnqueueOptions(workflow_name="w", queue_name="q", workflow_id_reuse_policy="sometimes")  # type: ignore[arg-type]
    with pytest.raises(DBOSException, match="workflow_id_reuse_policy"):
        SetWorkflowID("x", workflow_id_reuse_policy="never").__enter__()  # type: ignore[arg-type]


async def test_a_client_enqueue_stores_attributes_and_rejects_a_reused_id(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def job(x: int) -> int:
        return x * 2

    dbos.register_queue("attr_q")
    async with dbos.launched(), Client(dbos_url, app_name="wf-tests") as client:
        options = EnqueueOptions(
            workflow_name=job.__qualname__,
            queue_name="attr_q",
            workflow_id="client-attr",
            attributes={"source": "client"},
        )
        handle = await client.enqueue(options, 21)
        assert await handle.get_result() == 42
        found = await client.list_workflows(attributes={"source": "client"})
        assert [s.workflow_id for s in found] == ["client-attr"]
        # The default policy returns the existing workflow; "reject" refuses it.
        again = await client.enqueue(options, 1)
        assert await again.get_result() == 42
        with pytest.raises(DBOSWorkflowIDInUseError) as refused:
            await client.enqueue(
                EnqueueOptions(
                    workflow_name=job.__qualname__,
                    queue_name="attr_q",
                    workflow_id="client-attr",
                    workflow_id_reuse_policy="reject",
                ),
                1,
            )
        assert refused.value.dbos_error_code == 27
        assert refused.value.workflow_status == "SUCCESS"
        assert refused.value.workflow_name == job.__qualname__
        assert refused.value.message.startswith("Workflow ID client-attr is already in use by")
    assert stored(await status_row(dbos_url, "client-attr")) == {"source": "client"}


async def test_reject_refuses_an_existing_id_on_start_call_and_enqueue(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    runs: list[int] = []

    @dbos.workflow()
    async def once(x: int) -> int:
        runs.append(x)
        return x

    queue = dbos.register_queue("reuse_q")
    async with dbos.launched():
        with SetWorkflowID("reuse-1", workflow_id_reuse_policy="reject"):
            assert await once(1) == 1  # a new id is fine
        with (
            SetWorkflowID("reuse-1", workflow_id_reuse_policy="reject"),
            pytest.raises(DBOSWorkflowIDInUseError, match="reuse-1"),
        ):
            await once(2)
        with (
            SetWorkflowID("reuse-1", workflow_id_reuse_policy="reject"),
            pytest.raises(DBOSWorkflowIDInUseError),
        ):
            await dbos.start_workflow(once, 3)
        with (
            SetWorkflowID("reuse-1", workflow_id_reuse_policy="reject"),
            pytest.raises(DBOSWorkflowIDInUseError),
        ):
            await queue.enqueue(once, 4)
        # The default policy joins the existing workflow.
        with SetWorkflowID("reuse-1"):
            assert await once(5) == 1
    assert runs == [1]


async def test_a_lone_surrogate_is_refused_at_the_call_on_both_backends(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    # PostgreSQL refused it only inside the database; SQLite stored it.
    dbos = make_dbos()

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        refused = pytest.raises(DBOSInvalidArgumentError, match="lone surrogate")
        with refused, SetWorkflowAttributes({"note": "half \ud83d of a smile"}):
            pass
        with SetWorkflowAttributes({"ok": "fine"}), SetWorkflowID("kept"):
            await noop()
        with pytest.raises(DBOSInvalidArgumentError, match="lone surrogate"):
            await dbos.update_workflow_attributes("kept", {"\udcff": 1})
        status = await dbos.get_workflow_status("kept")
        assert status is not None and status.attributes == {"ok": "fine"}
