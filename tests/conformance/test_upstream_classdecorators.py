"""Port of the official SDK's ``tests/test_classdecorators.py``: workflows and steps on
static methods, class methods and ``DBOSConfiguredInstance`` instances, and their
recovery. (dbos_trio needs no ``@DBOS.dbos_class()``: see DEVIATIONS.md.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from trio.testing import MockClock

from dbos_trio import DBOS, DBOSConfiguredInstance, DBOSException, SetWorkflowID

from support.dbos_fixtures import reexecute


async def test_simple_workflow_static(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_simple_workflow_static"""
    counts = {"wf": 0, "step": 0}

    class Static:
        @staticmethod
        @dbos.workflow()
        async def a_workflow(one: str, two: str) -> str:
            counts["wf"] += 1
            return await Static.a_step(one) + two

        @staticmethod
        @dbos.step()
        async def a_step(value: str) -> str:
            counts["step"] += 1
            return value

    async with dbos.launched():
        assert await Static.a_workflow("bob", "1") == "bob1"
        with SetWorkflowID("wf"):
            handle = await dbos.start_workflow(Static.a_workflow, "bob", "1")
        assert await handle.get_result() == "bob1"
        status = await handle.get_status()
        assert status.class_name is None and status.config_name is None
        assert counts == {"wf": 2, "step": 2}


async def test_simple_workflow_class(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_simple_workflow_class"""

    class WithClass:
        counter = 0

        @classmethod
        @dbos.workflow()
        async def a_workflow(cls, value: str) -> str:
            cls.counter += 1
            return await cls.a_step(value)

        @classmethod
        @dbos.step()
        async def a_step(cls, value: str) -> str:
            return f"{cls.__name__}:{value}"

    async with dbos.launched():
        with SetWorkflowID("wf"):
            handle = await dbos.start_workflow(WithClass.a_workflow, "x")
        assert await handle.get_result() == "WithClass:x"
        status = await handle.get_status()
        assert status.class_name is not None and "WithClass" in status.class_name
        assert status.config_name is None
        assert WithClass.counter == 1


async def test_simple_workflow_inst(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_simple_workflow_inst"""

    class Inst(DBOSConfiguredInstance):
        def __init__(self) -> None:
            super().__init__("bob")
            self.wf_counter = 0
            self.step_counter = 0

        @dbos.workflow()
        async def a_workflow(self, one: str, two: str) -> str:
            self.wf_counter += 1
            return await self.a_step(one) + two

        @dbos.step()
        async def a_step(self, value: str) -> str:
            self.step_counter += 1
            return value

    instance = Inst()
    async with dbos.launched():
        assert await instance.a_workflow("bob", "1") == "bob1"
        handle = await dbos.start_workflow(instance.a_workflow, "bob", "1")
        status = await dbos.get_workflow_status(handle.workflow_id)
        assert status is not None and status.config_name == "bob"
        assert status.class_name is not None and "Inst" in status.class_name
        assert await handle.get_result() == "bob1"
        assert (instance.wf_counter, instance.step_counter) == (2, 2)


async def test_no_instname(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_no_instname"""

    class NotConfigured:
        @dbos.workflow()
        async def a_workflow(self) -> str:
            return "Nope"

    async with dbos.launched():
        with pytest.raises(DBOSException):
            await NotConfigured().a_workflow()


async def test_inst_recovery(dbos: DBOS, dbos_url: str, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_inst_recovery"""

    class Inst(DBOSConfiguredInstance):
        runs = 0

        def __init__(self) -> None:
            super().__init__("recovered")

        @dbos.workflow()
        async def a_workflow(self, value: int) -> str:
            Inst.runs += 1
            return f"{self.config_name}:{value}"

    instance = Inst()
    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert await instance.a_workflow(1) == "recovered:1"
        assert await reexecute(dbos, dbos_url, Inst.a_workflow, "wf", instance) == "recovered:1"
        assert Inst.runs == 2


async def test_class_queue_recovery(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_class_queue_recovery (enqueued methods)"""
    queue = dbos.register_queue("q")

    class Inst(DBOSConfiguredInstance):
        def __init__(self) -> None:
            super().__init__("queued")

        @dbos.workflow()
        async def by_instance(self, value: int) -> str:
            return f"{self.config_name}:{value}"

        @classmethod
        @dbos.workflow()
        async def by_class(cls, value: int) -> str:
            return f"{cls.__name__}:{value}"

        @staticmethod
        @dbos.workflow()
        async def by_static(value: int) -> str:
            return f"static:{value}"

    instance = Inst()
    async with dbos.launched():
        handles = [
            await queue.enqueue(instance.by_instance, 1),
            await queue.enqueue(Inst.by_class, 2),
            await queue.enqueue(Inst.by_static, 3),
        ]
        assert [await h.get_result() for h in handles] == ["queued:1", "Inst:2", "static:3"]


async def test_mixed_methods(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_mixed_methods"""

    class Mixed(DBOSConfiguredInstance):
        def __init__(self, multiplier: int) -> None:
            self.multiply: Callable[[int], int] = lambda x: x * multiplier
            super().__init__("test_class")

        @dbos.workflow()
        async def instance_workflow(self, value: int) -> int:
            return self.multiply(value)

        @classmethod
        @dbos.workflow()
        async def classmethod_workflow(cls, value: int) -> int:
            return value

        @staticmethod
        @dbos.workflow()
        async def staticmethod_workflow(value: int) -> int:
            return value

    instance = Mixed(5)
    async with dbos.launched():
        handle = await dbos.start_workflow(instance.instance_workflow, 2)
        assert await handle.get_result() == 10
        status = await handle.get_status()
        assert status.class_name is not None and "Mixed" in status.class_name
        assert status.config_name == "test_class"
        handle = await dbos.start_workflow(instance.classmethod_workflow, 2)
        assert await handle.get_result() == 2
        status = await handle.get_status()
        assert status.class_name is not None and status.config_name is None
        handle = await dbos.start_workflow(instance.staticmethod_workflow, 2)
        assert await handle.get_result() == 2
        status = await handle.get_status()
        assert status.class_name is None and status.config_name is None


async def test_class_step_without_dbos(dbos: DBOS) -> None:
    """upstream: tests/test_classdecorators.py::test_class_step_without_dbos"""

    class Steps:
        @staticmethod
        @dbos.step()
        async def add(a: int, b: int) -> int:
            return a + b

    assert await Steps.add(1, 2) == 3


async def test_class_with_only_steps(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_class_with_only_steps"""

    class StepClass:
        def __init__(self, base: int) -> None:
            self.base = base

        @dbos.step()
        async def combine(self, value: int, expr: Callable[[int, int], int]) -> int:
            return expr(self.base, value)

    instance = StepClass(5)

    @dbos.workflow()
    async def a_workflow() -> int:
        add: Callable[[int, int], Any] = lambda x, y: x + y  # noqa: E731
        return await instance.combine(5, add) + await instance.combine(5, add)

    async with dbos.launched():
        handle = await dbos.start_workflow(a_workflow)
        assert await handle.get_result() == 20
        steps = await dbos.list_workflow_steps(handle.workflow_id)
        assert [s.output for s in steps] == [10, 10]


async def test_class_recovery(dbos: DBOS, autojump_clock: MockClock) -> None:
    """upstream: tests/test_classdecorators.py::test_class_recovery"""
    runs = {"n": 0}

    class Recovered:
        @classmethod
        @dbos.workflow()
        async def check_cls(cls, arg: str) -> str:
            runs["n"] += 1
            assert arg == "arg1"
            assert cls is Recovered
            return "ran"

    async with dbos.launched():
        with SetWorkflowID("run1"):
            assert await Recovered.check_cls("arg1") == "ran"
        with SetWorkflowID("run1"):
            handle = await dbos.start_workflow(Recovered.check_cls, "arg1")
        assert await handle.get_result() == "ran"
        assert runs["n"] == 1


async def test_inst_recovery_missing_instance(
    dbos_url: str, caplog: pytest.LogCaptureFixture, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_classdecorators.py::test_inst_recovery_missing_instance"""
    import logging

    import trio

    from dbos_trio import Config

    from support.backends import execute

    def app(make_instance: bool) -> tuple[DBOS, Any]:
        instance = DBOS(Config(app_name="wf-tests", database_url=dbos_url, app_version="1.0.0"))

        class Missing(DBOSConfiguredInstance):
            def __init__(self) -> None:
                super().__init__("missing_instance")

            @instance.workflow(name="Missing.wf")
            async def wf(self, value: int) -> int:
                return value

        return instance, (Missing() if make_instance else None)

    first, obj = app(True)
    async with first.launched():
        with SetWorkflowID("wf"):
            assert await obj.wf(1) == 1
    await execute(
        dbos_url, "UPDATE {t}workflow_status SET status = 'PENDING' WHERE workflow_uuid = %s", "wf"
    )
    del obj
    import gc

    gc.collect()  # the instance registry holds instances weakly
    caplog.set_level(logging.WARNING)
    second, _ = app(False)
    async with second.launched():
        await trio.sleep(5)
    assert "not registered" in caplog.text
    assert "missing_instance" in caplog.text


async def test_class_static_queue_recovery(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_classdecorators.py::test_class_static_queue_recovery

    Upstream enqueues a static *step* (a temporary workflow, which dbos_trio does not
    have: DEVIATIONS.md); here a static workflow enqueues static child workflows, each
    running a static step, and every row is recovered."""
    from support.backends import execute

    counts = {"enqueues": 0, "steps": 0}
    queue = dbos.register_queue("test_queue")

    class TestClass:
        @staticmethod
        @dbos.workflow()
        async def test_workflow() -> list[int]:
            assert dbos.workflow_id == "wf"
            handles = []
            for index in range(5):
                counts["enqueues"] += 1
                handles.append(await queue.enqueue(TestClass.child, index))
            return [await h.get_result() for h in handles]

        @staticmethod
        @dbos.workflow()
        async def child(index: int) -> int:
            return await TestClass.test_step(index)

        @staticmethod
        @dbos.step()
        async def test_step(index: int) -> int:
            counts["steps"] += 1
            return index

    expected = list(range(5))
    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert (
                await (await dbos.start_workflow(TestClass.test_workflow)).get_result() == expected
            )
        assert counts == {"enqueues": 5, "steps": 5}
    await execute(
        dbos_url, "UPDATE {t}workflow_status SET status = 'PENDING' WHERE workflow_uuid LIKE 'wf%'"
    )
    async with dbos.launched():  # recovers the workflow and each of its children
        assert await (await dbos.retrieve_workflow("wf")).get_result() == expected
        rows = await dbos.list_workflows(workflow_id_prefix="wf")
        assert len(rows) == 6
        for row in rows:
            await (await dbos.retrieve_workflow(row.workflow_id)).get_result()
            status = await dbos.get_workflow_status(row.workflow_id)
            assert status is not None and status.status == "SUCCESS"
            assert status.recovery_attempts == 2
            assert (status.class_name, status.config_name) == (None, None)  # static: no class
        # The parent ran again (its enqueues replayed), the steps did not.
        assert counts == {"enqueues": 10, "steps": 5}
        with SetWorkflowID("wf"):
            assert await TestClass.test_workflow() == expected  # finished: not run again
        assert counts == {"enqueues": 10, "steps": 5}
        assert await dbos.list_queued_workflows() == []


async def test_class_classmethod_queue_recovery(
    dbos: DBOS, dbos_url: str, autojump_clock: MockClock
) -> None:
    """upstream: tests/test_classdecorators.py::test_class_classmethod_queue_recovery

    As test_class_static_queue_recovery, with class methods: their rows name the class."""
    from support.backends import execute

    counts = {"enqueues": 0, "steps": 0}
    multiplier = 5
    queue = dbos.register_queue("test_queue")

    class TestClass:
        multiply: Callable[[int], int] = staticmethod(lambda _: 0)  # type: ignore[assignment]

        @classmethod
        @dbos.workflow()
        async def test_workflow(cls) -> list[int]:
            cls.multiply = staticmethod(lambda x: x * multiplier)  # type: ignore[assignment]
            assert dbos.workflow_id == "wf"
            handles = []
            for index in range(5):
                counts["enqueues"] += 1
                handles.append(await queue.enqueue(TestClass.child, index))
            return [await h.get_result() for h in handles]

        @classmethod
        @dbos.workflow()
        async def child(cls, index: int) -> int:
            return await cls.test_step(index)

        @classmethod
        @dbos.step()
        async def test_step(cls, index: int) -> int:
            counts["steps"] += 1
            return cls.multiply(index)

    expected = [index * multiplier for index in range(5)]
    async with dbos.launched():
        with SetWorkflowID("wf"):
            assert (
                await (await dbos.start_workflow(TestClass.test_workflow)).get_result() == expected
            )
        assert counts == {"enqueues": 5, "steps": 5}
    await execute(
        dbos_url, "UPDATE {t}workflow_status SET status = 'PENDING' WHERE workflow_uuid LIKE 'wf%'"
    )
    async with dbos.launched():
        assert await (await dbos.retrieve_workflow("wf")).get_result() == expected
        rows = await dbos.list_workflows(workflow_id_prefix="wf")
        assert len(rows) == 6
        for row in rows:
            await (await dbos.retrieve_workflow(row.workflow_id)).get_result()
            status = await dbos.get_workflow_status(row.workflow_id)
            assert status is not None and status.status == "SUCCESS"
            assert status.class_name is not None and "TestClass" in status.class_name
            assert status.config_name is None
        assert counts == {"enqueues": 10, "steps": 5}
        with SetWorkflowID("wf"):
            assert await TestClass.test_workflow() == expected
        assert counts == {"enqueues": 10, "steps": 5}
        assert await dbos.list_queued_workflows() == []
