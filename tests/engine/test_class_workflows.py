"""Workflows on classes: static methods, class methods, and DBOSConfiguredInstance methods.

The classes are built per test (inside a factory) so each test registers on its own DBOS
instance; their qualified names are what the rows store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dbos_trio import (
    DBOS,
    DBOSConfiguredInstance,
    DBOSConflictingWorkflowError,
    DBOSException,
    SetWorkflowID,
)

from support.backends import status_row, steps_of
from support.dbos_fixtures import reexecute

MakeDBOS = Callable[..., DBOS]


def build_classes(dbos: DBOS, runs: dict[str, int]) -> tuple[type[Any], type[Any]]:
    class Tools:
        @staticmethod
        @dbos.workflow()
        async def static_wf(x: int) -> int:
            runs["static"] = runs.get("static", 0) + 1
            return await Tools.static_step(x)

        @staticmethod
        @dbos.step()
        async def static_step(x: int) -> int:
            return x + 1

        @classmethod
        @dbos.workflow()
        async def class_wf(cls, x: int) -> str:
            runs["class"] = runs.get("class", 0) + 1
            return f"{cls.__name__}:{x}"

    class Account(DBOSConfiguredInstance):
        def __init__(self, owner: str) -> None:
            self.owner = owner
            super().__init__(config_name=owner)

        @dbos.workflow()
        async def deposit(self, amount: int) -> str:
            runs[self.owner] = runs.get(self.owner, 0) + 1
            return await self.describe(amount)

        @dbos.step()
        async def describe(self, amount: int) -> str:
            return f"{self.owner}+{amount}"

    return Tools, Account


async def test_a_static_method_workflow_stores_no_class_name(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs: dict[str, int] = {}
    tools, _ = build_classes(dbos, runs)

    async with dbos.launched():
        with SetWorkflowID("static-1"):
            assert await tools.static_wf(1) == 2
        with SetWorkflowID("static-1"):
            assert await tools.static_wf(1) == 2
        with SetWorkflowID("static-2"):
            handle = await dbos.start_workflow(tools.static_wf, 5)
        assert await handle.get_result() == 6
        assert await reexecute(dbos, dbos_url, tools.static_wf, "static-1") == 2
        status = await dbos.get_workflow_status("static-1")

    assert runs["static"] == 3
    row = await status_row(dbos_url, "static-1")
    assert (row["name"], row["class_name"], row["config_name"]) == (
        tools.static_wf.__qualname__,
        None,
        None,
    )
    assert status is not None and status.input == {"args": (1,), "kwargs": {}}
    assert await steps_of(dbos_url, "static-1") == [(1, tools.static_step.__qualname__, None)]


async def test_a_class_method_workflow_stores_its_class_and_not_the_class_object(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs: dict[str, int] = {}
    tools, _ = build_classes(dbos, runs)

    async with dbos.launched():
        with SetWorkflowID("class-1"):
            assert await tools.class_wf(7) == "Tools:7"
        with SetWorkflowID("class-2"):
            handle = await dbos.start_workflow(tools.class_wf, 8)
        assert await handle.get_result() == "Tools:8"
        assert await reexecute(dbos, dbos_url, tools.class_wf, "class-1", tools) == "Tools:7"
        status = await dbos.get_workflow_status("class-1")

    row = await status_row(dbos_url, "class-1")
    assert row["class_name"] == tools.__qualname__
    assert row["config_name"] is None
    assert status is not None and status.input == {"args": (7,), "kwargs": {}}
    assert runs["class"] == 3


async def test_instance_workflows_store_class_and_config_and_keep_instances_apart(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs: dict[str, int] = {}
    _, account = build_classes(dbos, runs)
    alice = account("alice")
    bob = account("bob")

    async with dbos.launched():
        with SetWorkflowID("deposit-a"):
            assert await alice.deposit(10) == "alice+10"
        with SetWorkflowID("deposit-b"):
            handle = await dbos.start_workflow(bob.deposit, 20)
        assert await handle.get_result() == "bob+20"
        with SetWorkflowID("deposit-a"):
            assert await alice.deposit(10) == "alice+10"
        # The same id from another instance is another workflow: a conflict.
        with SetWorkflowID("deposit-a"), pytest.raises(DBOSConflictingWorkflowError) as raised:
            await bob.deposit(10)
        assert await reexecute(dbos, dbos_url, account.deposit, "deposit-a", alice) == "alice+10"
        status = await dbos.get_workflow_status("deposit-a")

    assert runs == {"alice": 2, "bob": 1}
    assert "config" in str(raised.value)
    row = await status_row(dbos_url, "deposit-a")
    assert (row["class_name"], row["config_name"]) == (account.__qualname__, "alice")
    assert (await status_row(dbos_url, "deposit-b"))["config_name"] == "bob"
    # The inputs leave out self.
    assert status is not None and status.input == {"args": (10,), "kwargs": {}}
    assert await steps_of(dbos_url, "deposit-a") == [(1, account.describe.__qualname__, None)]


async def test_two_configured_instances_of_one_class_need_different_config_names(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()
    _, account = build_classes(dbos, {})
    first = account("carol")
    with pytest.raises(DBOSException, match="carol"):
        account("carol")
    assert DBOSConfiguredInstance.find_instance(account.__qualname__, "carol") is first
    with pytest.raises(DBOSException, match="config_name"):
        account("")


async def test_a_configured_instance_is_not_kept_alive_by_registration(
    make_dbos: MakeDBOS,
) -> None:
    import gc
    import weakref

    dbos = make_dbos()
    _, account = build_classes(dbos, {})
    reference = weakref.ref(account("dave"))
    gc.collect()
    assert reference() is None
    assert DBOSConfiguredInstance.find_instance(account.__qualname__, "dave") is None
    account("dave")  # the name is free again
