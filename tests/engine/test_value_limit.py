"""The size guard: a value over Config.max_value_bytes is refused before it is written,
with an error naming the value, its size and the limit; an error over it is stored
shortened so its workflow still ends (docs/input-and-trust.md#large-values)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbos_trio import (
    DBOS,
    Client,
    DBOSConfigError,
    DBOSValueTooLargeError,
    EnqueueOptions,
    SetWorkflowID,
)
from dbos_trio._config import Config

from support.backends import count_rows, query, status_row, steps_of

MakeDBOS = Callable[..., DBOS]
LIMIT = 8192
BIG = "x" * 9000  # 9,002 bytes once serialized as JSON; a little more pickled


def too_large(what: str) -> str:
    return rf"^DBOS Error: {what} is [\d,]+ bytes once serialized, over the limit of 8,192 bytes"


@pytest.mark.parametrize("portable", [False, True], ids=["pickle", "portable"])
async def test_every_kind_of_value_over_the_limit_is_refused_naming_it_before_a_write(
    make_dbos: MakeDBOS, dbos_url: str, portable: bool
) -> None:
    dbos = make_dbos(max_value_bytes=LIMIT)
    serialization = "portable" if portable else None

    @dbos.workflow(serialization=serialization)
    async def takes(value: str) -> int:
        return len(value)

    @dbos.step()
    async def big_step() -> str:
        return BIG

    @dbos.workflow(serialization=serialization)
    async def returns_big() -> str:
        return BIG

    @dbos.workflow(serialization=serialization)
    async def calls_big_step() -> str:
        try:
            await big_step()
        except DBOSValueTooLargeError as refused:
            return str(refused)
        return "stored"

    @dbos.workflow(serialization=serialization)
    async def publishes() -> list[str]:
        refusals = []
        for publish in (
            lambda: dbos.set_event("big", BIG),
            lambda: dbos.write_stream("big", BIG),
            lambda: dbos.send("nobody-needed", BIG, "t"),
        ):
            try:
                await publish()
            except DBOSValueTooLargeError as refused:
                assert isinstance(refused, ValueError)
                refusals.append(str(refused))
        return refusals

    async with dbos.launched():
        with pytest.raises(
            DBOSValueTooLargeError, match=too_large(r"the inputs of workflow \S+\.takes")
        ):
            await takes(BIG)
        assert await count_rows(dbos_url, "workflow_status") == 0
        assert await count_rows(dbos_url, "workflow_input") == 0
        with pytest.raises(DBOSValueTooLargeError, match=too_large("the message to workflow w")):
            await dbos.send("w", BIG)
        with SetWorkflowID("out-1"), pytest.raises(DBOSValueTooLargeError) as output_error:
            await returns_big()
        with SetWorkflowID("step-1"):
            step_refusal = await calls_big_step()
        with SetWorkflowID("pub-1"):
            refusals = await publishes()

    assert "(Config.max_value_bytes)" in str(output_error.value)
    assert str(output_error.value).startswith(
        f"DBOS Error: the output of workflow out-1 ({returns_big.__qualname__}) is "
    )
    assert (await status_row(dbos_url, "out-1"))["status"] == "ERROR"
    assert await query(
        dbos_url, "SELECT output FROM {t}workflow_output WHERE workflow_uuid = 'out-1'"
    ) in ([], [(None,)])
    assert step_refusal.startswith(
        f"DBOS Error: the output of step {big_step.__qualname__} in workflow step-1 is "
    )
    # The step failed with the size error: recorded as its error, never the value.
    [(output, error)] = await steps_of(dbos_url, "step-1", "output, error")
    assert output is None and error is not None and len(error) < LIMIT
    assert [r.split(" is ")[0] for r in refusals] == [
        "DBOS Error: the value of event 'big'",
        "DBOS Error: the value written to stream 'big'",
        "DBOS Error: the message to workflow nobody-needed on topic 't'",
    ]
    assert await count_rows(dbos_url, "notifications") == 0
    assert await count_rows(dbos_url, "workflow_events") == 0
    assert await count_rows(dbos_url, "streams") == 0


@pytest.mark.parametrize("portable", [False, True], ids=["pickle", "portable"])
async def test_an_error_over_the_limit_is_stored_shortened_and_the_workflow_ends(
    make_dbos: MakeDBOS, dbos_url: str, portable: bool
) -> None:
    dbos = make_dbos(max_value_bytes=LIMIT)

    @dbos.workflow(serialization="portable" if portable else None)
    async def fails() -> None:
        raise ValueError("y" * 50_000)

    async with dbos.launched():
        with SetWorkflowID("err-1"), pytest.raises(ValueError):
            await fails()
        with pytest.raises(Exception, match=r"shortened: the error was [\d,]+ bytes") as stored:
            await (await dbos.retrieve_workflow("err-1")).get_result()
    assert "ValueError" in (stored.value.name if portable else str(stored.value))  # type: ignore[attr-defined]
    [(error,)] = await query(
        dbos_url, "SELECT error FROM {t}workflow_output WHERE workflow_uuid = 'err-1'"
    )
    assert len(error) < LIMIT
    assert (await status_row(dbos_url, "err-1"))["status"] == "ERROR"


async def test_a_client_refuses_an_enqueue_over_its_limit_naming_its_setting(
    dbos_url: str, make_dbos: MakeDBOS
) -> None:
    async with Client(dbos_url, max_value_bytes=LIMIT) as client:
        options = EnqueueOptions(queue_name="q", workflow_name="anything")
        with pytest.raises(DBOSValueTooLargeError, match=r"\(Client max_value_bytes\)"):
            await client.enqueue(options, BIG)
    assert await count_rows(dbos_url, "workflow_status") == 0


def test_the_limit_is_checked_when_the_config_is_made() -> None:
    for bad in (0, 100, -1, 1.5, True, "16MB"):
        with pytest.raises(DBOSConfigError, match=r"Config\.max_value_bytes"):
            Config(app_name="limits", max_value_bytes=bad)
    assert Config(app_name="limits").max_value_bytes == 16 * 1024 * 1024
    assert Config(app_name="limits", max_value_bytes=None).max_value_bytes is None
