"""Payload formats of workflows and steps: pickle, portable JSON, custom serializers."""

from __future__ import annotations

import base64
import contextlib
import json
import pickle
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from dbos_trio import (
    DBOS,
    DBOSException,
    DBOSMaxStepRetriesExceeded,
    PortableWorkflowError,
    SetWorkflowID,
)

from support.backends import count_rows, query, status_row, steps_of
from support.dbos_fixtures import reexecute

MakeDBOS = Callable[..., DBOS]


class Point:
    """A user class: picklable because it lives at module level."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))


class InsufficientFunds(Exception):
    def __init__(self, account: str, missing: int) -> None:
        super().__init__(account, missing)
        self.account = account
        self.missing = missing


class TaggedJSON:
    """A custom serializer: JSON, tagged so the tests can tell its payloads apart."""

    def serialize(self, value: Any) -> str:
        return "tj:" + json.dumps(value)

    def deserialize(self, text: str) -> Any:
        assert text.startswith("tj:"), text
        return json.loads(text[3:])

    def name(self) -> str:
        return "tagged_json"


async def workflow_payloads(url: str, workflow_id: str) -> tuple[str, str | None, str | None]:
    rows = await query(
        url,
        "SELECT ws.serialization, wi.inputs, wo.output FROM {t}workflow_status ws "
        "LEFT JOIN {t}workflow_input wi USING (workflow_uuid) "
        "LEFT JOIN {t}workflow_output wo USING (workflow_uuid) WHERE workflow_uuid = %s",
        workflow_id,
    )
    return rows[0][0], rows[0][1], rows[0][2]


async def step_payloads(url: str, workflow_id: str) -> list[tuple[Any, ...]]:
    """(serialization, output, error) of each checkpoint, in id order."""
    return await steps_of(url, workflow_id, "serialization, output, error")


def unpickle(text: str) -> Any:
    return pickle.loads(base64.b64decode(text))


MOMENT = datetime(2024, 2, 29, 23, 59, 58, 123000, tzinfo=timezone(timedelta(hours=2)))


async def test_pickled_values_round_trip_including_datetimes_and_user_classes(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.step()
    async def shift(moment: datetime) -> datetime:
        return moment + timedelta(days=1)

    @dbos.workflow()
    async def pickled(moment: datetime, amount: Decimal, *, points: set[Point]) -> dict[str, Any]:
        return {"next": await shift(moment), "amount": amount * 2, "points": points}

    points = {Point(1, 2), Point(3, 4)}
    expected = {"next": MOMENT + timedelta(days=1), "amount": Decimal("2.50"), "points": points}
    async with dbos.launched():
        with SetWorkflowID("pickled-1"):
            assert await pickled(MOMENT, Decimal("1.25"), points=points) == expected
        # A later caller reads the outcome back from the database.
        handle = await dbos.retrieve_workflow("pickled-1")
        assert await handle.get_result() == expected
        status = await handle.get_status()

    assert status.input == {"args": (MOMENT, Decimal("1.25")), "kwargs": {"points": points}}
    fmt, inputs, output = await workflow_payloads(dbos_url, "pickled-1")
    assert fmt == "py_pickle"
    assert inputs is not None and output is not None
    assert unpickle(inputs) == {"args": (MOMENT, Decimal("1.25")), "kwargs": {"points": points}}
    assert unpickle(output) == expected
    [(step_fmt, step_output, step_error)] = await step_payloads(dbos_url, "pickled-1")
    assert step_fmt == "py_pickle" and step_error is None
    assert step_output is not None and unpickle(step_output) == MOMENT + timedelta(days=1)


async def test_a_workflow_error_reaches_a_later_caller_as_the_same_exception(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def fail(kind: str) -> None:
        if kind == "value":
            raise ValueError("x")
        if kind == "custom":
            raise InsufficientFunds("acct-1", 42)
        raise DBOSMaxStepRetriesExceeded("a step", 2, [ValueError("1"), KeyError("2")])

    expected_errors = (ValueError, InsufficientFunds, DBOSMaxStepRetriesExceeded)
    async with dbos.launched():
        for kind in ("value", "custom", "dbos"):
            with SetWorkflowID(f"fail-{kind}"), pytest.raises(expected_errors):
                await fail(kind)
        later = {}
        for kind in ("value", "custom", "dbos"):
            handle = await dbos.retrieve_workflow(f"fail-{kind}")
            with pytest.raises(Exception) as raised:
                await handle.get_result()
            later[kind] = raised.value

    assert type(later["value"]) is ValueError and later["value"].args == ("x",)
    custom = later["custom"]
    assert isinstance(custom, InsufficientFunds)
    assert (custom.account, custom.missing) == ("acct-1", 42)
    retries = later["dbos"]
    assert isinstance(retries, DBOSMaxStepRetriesExceeded)
    assert retries.dbos_error_code == 7
    assert str(retries) == "DBOS Error 7: Step a step has exceeded its maximum of 2 retries"
    assert [type(e) for e in retries.errors] == [ValueError, KeyError]


async def test_portable_workflows_store_json_envelopes_readable_by_any_sdk(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    received: list[Any] = []

    @dbos.step()
    async def pickled_step() -> set[int]:
        return {1, 2}

    @dbos.workflow(serialization="portable")
    async def portable(moment: datetime, amount: Decimal, *, tags: tuple[str, ...]) -> Any:
        received.extend([moment, amount, tags])
        steps = await pickled_step()
        return {"moment": moment, "day": moment.date(), "amount": amount, "tags": tags,
                "steps": sorted(steps)}  # fmt: skip

    async with dbos.launched():
        with SetWorkflowID("portable-1"):
            direct = await portable(MOMENT, Decimal("10.50"), tags=("a", "b"))
        later = await (await dbos.retrieve_workflow("portable-1")).get_result()
        status = await dbos.get_workflow_status("portable-1")

    # The body and the direct caller see Python values; the stored form is JSON.
    assert received == [MOMENT, Decimal("10.50"), ("a", "b")]
    assert direct["moment"] == MOMENT
    expected_json = {
        "moment": "2024-02-29T21:59:58.123Z",
        "day": "2024-02-29",
        "amount": "10.50",
        "tags": ["a", "b"],
        "steps": [1, 2],
    }
    assert later == expected_json
    fmt, inputs, output = await workflow_payloads(dbos_url, "portable-1")
    assert fmt == "portable_json"
    assert inputs is not None and json.loads(inputs) == {
        "positionalArgs": ["2024-02-29T21:59:58.123Z", "10.50"],
        "namedArgs": {"tags": ["a", "b"]},
    }
    assert output is not None and json.loads(output) == expected_json
    assert status is not None
    assert status.input == {
        "args": ("2024-02-29T21:59:58.123Z", "10.50"),
        "kwargs": {"tags": ["a", "b"]},
    }
    # Step outputs use the application's serializer, whatever the workflow's format.
    [(step_fmt, step_output, _)] = await step_payloads(dbos_url, "portable-1")
    assert step_fmt == "py_pickle"
    assert step_output is not None and unpickle(step_output) == {1, 2}


async def test_a_portable_workflow_error_comes_back_as_portable_workflow_error(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow(serialization="portable")
    async def portable_failure() -> None:
        raise ValueError("x")

    async with dbos.launched():
        with SetWorkflowID("portable-err"), pytest.raises(ValueError, match=r"^x$"):
            await portable_failure()
        with pytest.raises(PortableWorkflowError) as raised:
            await (await dbos.retrieve_workflow("portable-err")).get_result()
        # Calling it again by id also gets the stored (portable) form.
        with SetWorkflowID("portable-err"), pytest.raises(PortableWorkflowError):
            await portable_failure()

    assert (raised.value.name, raised.value.message, str(raised.value)) == ("ValueError", "x", "x")
    rows = await query(
        dbos_url, "SELECT error FROM {t}workflow_output WHERE workflow_uuid = 'portable-err'"
    )
    envelope = json.loads(rows[0][0])
    assert envelope["name"] == "ValueError" and envelope["message"] == "x"
    assert "code" in envelope


async def test_a_native_workflow_is_pickled_even_with_a_custom_serializer(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos(serializer=TaggedJSON())

    @dbos.workflow(serialization="native")
    async def native(x: int) -> list[int]:
        return [x, x]

    async with dbos.launched():
        with SetWorkflowID("native-1"):
            assert await native(3) == [3, 3]
        assert await (await dbos.retrieve_workflow("native-1")).get_result() == [3, 3]
    fmt, inputs, output = await workflow_payloads(dbos_url, "native-1")
    assert fmt == "py_pickle"
    assert inputs is not None and unpickle(inputs) == {"args": (3,), "kwargs": {}}
    assert output is not None and unpickle(output) == [3, 3]


async def test_an_unpicklable_argument_fails_the_start_and_writes_nothing(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    runs = {"body": 0}

    @dbos.workflow()
    async def takes(value: Any) -> None:
        runs["body"] += 1

    @dbos.workflow(serialization="portable")
    async def takes_portable(value: Any) -> None:
        runs["body"] += 1

    @dbos.workflow()
    async def parent() -> str:
        try:
            await takes(threading.Lock())
        except DBOSException as error:
            return str(error)
        return "started"

    async with dbos.launched():
        with pytest.raises(DBOSException, match=r"cannot serialize the arguments of workflow"):
            await takes(threading.Lock())
        with pytest.raises(DBOSException, match="cannot serialize"):
            await dbos.start_workflow(takes, lambda: None)
        with pytest.raises(DBOSException, match="portable_json"):
            await takes_portable(object())
        assert await count_rows(dbos_url, "workflow_status") == 0
        assert await count_rows(dbos_url, "workflow_input") == 0
        with SetWorkflowID("parent-1"):
            message = await parent()

    assert "cannot serialize the arguments" in message and "lock" in message
    assert runs["body"] == 0
    # Only the parent exists; the child's start wrote neither a row nor a checkpoint.
    assert await count_rows(dbos_url, "workflow_status") == 1
    assert await count_rows(dbos_url, "operation_outputs") == 0


async def test_an_unserializable_result_is_recorded_as_an_error(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.step()
    async def bad_step() -> Any:
        return threading.Lock()

    @dbos.workflow()
    async def bad_workflow() -> Any:
        return threading.Lock()

    @dbos.workflow()
    async def calls_bad_step() -> str:
        try:
            await bad_step()
        except DBOSException as error:
            return str(error)
        return "stored"

    async with dbos.launched():
        with SetWorkflowID("bad-1"), pytest.raises(DBOSException, match="cannot serialize"):
            await bad_workflow()
        with SetWorkflowID("bad-2"):
            assert "cannot serialize the result of step" in await calls_bad_step()
        steps = await dbos.list_workflow_steps("bad-2")

    assert (await status_row(dbos_url, "bad-1"))["status"] == "ERROR"
    assert len(steps) == 1 and isinstance(steps[0].error, DBOSException)


async def test_a_custom_serializer_writes_and_names_every_payload(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos(serializer=TaggedJSON())

    @dbos.step()
    async def add(a: int, b: int) -> int:
        return a + b

    @dbos.workflow()
    async def child(values: list[int]) -> dict[str, int]:
        return {"sum": await add(*values)}

    @dbos.workflow()
    async def parent(values: list[int]) -> dict[str, int]:
        return await child(values)

    async with dbos.launched():
        with SetWorkflowID("custom-1"):
            assert await parent([1, 2]) == {"sum": 3}
        assert await (await dbos.retrieve_workflow("custom-1")).get_result() == {"sum": 3}
        status = await dbos.get_workflow_status("custom-1")
        steps = await dbos.list_workflow_steps("custom-1-1")

    assert status is not None and status.input == {"args": ([1, 2],), "kwargs": {}}
    assert status.serialization == "tagged_json"
    for workflow_id in ("custom-1", "custom-1-1"):
        fmt, inputs, output = await workflow_payloads(dbos_url, workflow_id)
        assert fmt == "tagged_json"
        assert inputs == 'tj:{"args": [[1, 2]], "kwargs": {}}'
        assert output == 'tj:{"sum": 3}'
    assert await step_payloads(dbos_url, "custom-1") == [
        (None, None, None),  # the child's start: only its id
        ("tagged_json", 'tj:{"sum": 3}', None),  # DBOS.getResult: the child's outcome
    ]
    assert [s.output for s in steps] == [3]
    assert await step_payloads(dbos_url, "custom-1-1") == [("tagged_json", "tj:3", None)]


async def test_an_error_a_custom_serializer_cannot_store_is_recorded_as_text(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos(serializer=TaggedJSON())

    @dbos.step()
    async def failing_step() -> None:
        raise KeyError("k")

    @dbos.workflow()
    async def failing() -> None:
        with contextlib.suppress(KeyError):
            await failing_step()
        raise ValueError("x")

    async with dbos.launched():
        with SetWorkflowID("custom-err"), pytest.raises(ValueError, match=r"^x$"):
            await failing()
        with pytest.raises(Exception, match=r"^ValueError: x$") as raised:
            await (await dbos.retrieve_workflow("custom-err")).get_result()
        steps = await dbos.list_workflow_steps("custom-err")

    assert type(raised.value) is Exception
    row = await status_row(dbos_url, "custom-err")
    assert row["status"] == "ERROR"
    assert str(steps[0].error) == "KeyError: 'k'"


async def test_a_workflow_keeps_its_stored_format_when_replayed_under_another_serializer(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    runs = {"first": 0, "second": 0}

    def register(dbos: DBOS) -> Any:
        @dbos.step()
        async def first() -> list[str]:
            runs["first"] += 1
            return ["one"]

        @dbos.step()
        async def second() -> list[str]:
            runs["second"] += 1
            return ["two"]

        @dbos.workflow(name="formats")
        async def formats(when: str) -> list[str]:
            done = await first()
            return done + await second() + [when]

        return formats

    pickled_dbos = make_dbos()
    formats = register(pickled_dbos)
    moment = "2025-01-01"
    async with pickled_dbos.launched():
        with SetWorkflowID("formats-1"):
            assert await formats(moment) == ["one", "two", moment]

    # A process configured with another serializer: the stored outcome is still read in
    # its own format, and a re-execution keeps writing the workflow's format.
    custom_dbos = make_dbos(serializer=TaggedJSON())
    formats = register(custom_dbos)
    async with custom_dbos.launched():
        with SetWorkflowID("formats-1"):
            assert await formats(moment) == ["one", "two", moment]
        # The second checkpoint is lost (say the process crashed before it): only it runs.
        await query(
            dbos_url,
            "DELETE FROM {t}operation_outputs WHERE workflow_uuid = 'formats-1' "
            "AND function_id = 2",
        )
        assert await reexecute(custom_dbos, dbos_url, formats, "formats-1") == [
            "one",
            "two",
            moment,
        ]

    assert runs == {"first": 1, "second": 2}
    fmt, _, output = await workflow_payloads(dbos_url, "formats-1")
    assert fmt == "py_pickle"
    assert output is not None and unpickle(output) == ["one", "two", moment]
    # The replayed checkpoint kept its format; the new one is in the application's.
    assert [f for f, _, _ in await step_payloads(dbos_url, "formats-1")] == [
        "py_pickle",
        "tagged_json",
    ]
