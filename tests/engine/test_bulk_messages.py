"""send_bulk, send_to_forks, per-call serialization, get_all_events, read_stream_offset,
read_stream with an offset and a timeout, and get_result by id — on both backends.

Each test asserts what a receiver, a reader or the stored rows show.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbos_trio import (
    DBOS,
    DBOSException,
    DBOSNonExistentWorkflowError,
    DBOSStreamTimeoutError,
    SendMessage,
    SetWorkflowID,
)

from support.backends import query, steps_of

MakeDBOS = Callable[..., DBOS]


async def test_send_bulk_delivers_every_message_in_one_step(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def inbox(count: int) -> list[str]:
        return [await dbos.recv("t", timeout_seconds=30) for _ in range(count)]

    @dbos.workflow()
    async def sender(targets: list[str]) -> None:
        await dbos.send_bulk(
            [SendMessage(destination_id=t, message=f"hi {t}", topic="t") for t in targets]
            + [SendMessage(destination_id=targets[0], message="again", topic="t")]
        )

    async with dbos.launched():
        with SetWorkflowID("box-a"):
            a = await dbos.start_workflow(inbox, 2)
        with SetWorkflowID("box-b"):
            b = await dbos.start_workflow(inbox, 1)
        with SetWorkflowID("bulk-sender"):
            await sender(["box-a", "box-b"])
        assert await a.get_result() == ["hi box-a", "again"]
        assert await b.get_result() == ["hi box-b"]
        assert await steps_of(dbos_url, "bulk-sender") == [(1, "DBOS.send_bulk", None)]
        # A missing destination sends none of the batch.
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.send_bulk(
                [
                    SendMessage(destination_id="box-a", message="lost", topic="late"),
                    SendMessage(destination_id="nobody", message="x"),
                ]
            )
        late = await query(dbos_url, "SELECT 1 FROM {t}notifications WHERE topic = %s", "late")
        assert late == []
        with pytest.raises(DBOSException, match="used twice"):
            await dbos.send_bulk(
                [
                    SendMessage(destination_id="box-a", message=1, idempotency_key="k"),
                    SendMessage(destination_id="box-a", message=2, idempotency_key="k"),
                ]
            )
        with pytest.raises(DBOSException, match="SendMessage"):
            await dbos.send_bulk([("box-a", "x")])  # type: ignore[list-item]


async def test_send_to_forks_reaches_the_forks_and_serialization_picks_the_format(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def waiter() -> str:
        return await dbos.recv(timeout_seconds=30)

    async with dbos.launched():
        with SetWorkflowID("orig"):
            original = await dbos.start_workflow(waiter)
        await dbos.send("orig", "first")
        assert await original.get_result() == "first"
        with SetWorkflowID("fork-1"):
            await dbos.fork_workflow("orig", 1, queue_name="nobody_serves_q")
        with SetWorkflowID("fork-2"):
            await dbos.fork_workflow("fork-1", 1, queue_name="nobody_serves_q")
        await dbos.send("orig", {"to": "all"}, send_to_forks=True, serialization="portable")
        rows = await query(
            dbos_url,
            "SELECT destination_uuid, serialization, message FROM {t}notifications "
            "WHERE NOT consumed ORDER BY destination_uuid",
        )
        assert [(r[0], r[1]) for r in rows] == [
            ("fork-1", "portable_json"),
            ("fork-2", "portable_json"),
            ("orig", "portable_json"),
        ]
        assert rows[0][2] == '{"to":"all"}' or rows[0][2].replace(" ", "") == '{"to":"all"}'
        with pytest.raises(DBOSException, match="serialization"):
            await dbos.send("orig", 1, serialization="yaml")  # type: ignore[arg-type]


async def test_get_all_events_and_read_stream_offset_answer_from_the_stored_rows(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def publisher() -> None:
        await dbos.set_event("a", 1)
        await dbos.set_event("b", {"x": [1, 2]})
        await dbos.set_event("a", 2)
        for value in ("s0", "s1", "s2"):
            await dbos.write_stream("s", value)
        await dbos.close_stream("s")

    @dbos.workflow()
    async def reader(target: str) -> list[object]:
        events = await dbos.get_all_events(target)
        one = await dbos.read_stream_offset(target, "s", 1)
        return [events, one]

    async with dbos.launched():
        with SetWorkflowID("pub"):
            await publisher()
        assert await dbos.get_all_events("pub") == {"a": 2, "b": {"x": [1, 2]}}
        assert await dbos.get_all_events("no-such-workflow") == {}
        assert await dbos.read_stream_offset("pub", "s", 2) == "s2"
        with pytest.raises(DBOSStreamTimeoutError):
            await dbos.read_stream_offset("pub", "s", 3)  # the close marker
        with pytest.raises(DBOSStreamTimeoutError):
            await dbos.read_stream_offset("pub", "s", 9)  # past the end of a finished writer
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.read_stream_offset("no-such-workflow", "s", 0)
        assert [v async for v in dbos.read_stream("pub", "s", offset=1)] == ["s1", "s2"]
        with SetWorkflowID("rdr"):
            assert await reader("pub") == [{"a": 2, "b": {"x": [1, 2]}}, "s1"]
        assert [s[1] for s in await steps_of(dbos_url, "rdr")] == [
            "DBOS.get_events",
            "DBOS.readStreamOffset",
        ]


async def test_waits_with_a_timeout_give_up_and_get_result_by_id_returns_the_outcome(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def slow() -> str:
        await dbos.write_stream("s", "only")
        got = await dbos.recv("go", timeout_seconds=60)
        return f"done {got}"

    async with dbos.launched():
        with SetWorkflowID("slow-1"):
            await dbos.start_workflow(slow)
        with pytest.raises(TimeoutError, match="slow-1"):
            await dbos.get_result("slow-1", timeout=0.2)
        with pytest.raises(DBOSStreamTimeoutError):
            async for _ in dbos.read_stream("slow-1", "s", offset=1, timeout_seconds=0.2):
                pass
        with pytest.raises(DBOSStreamTimeoutError):
            await dbos.read_stream_offset("slow-1", "s", 1, timeout_seconds=0.2)
        await dbos.send("slow-1", "now", "go")
        assert await dbos.get_result("slow-1") == "done now"
        assert await dbos.get_result("slow-1", timeout=5) == "done now"
        with pytest.raises(DBOSNonExistentWorkflowError):
            await dbos.get_result("no-such-workflow")


async def test_set_event_and_write_stream_store_the_format_asked_for(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def writer() -> None:
        await dbos.set_event("e", {"v": 1}, serialization="portable")
        await dbos.set_event("d", 2)
        await dbos.write_stream("s", [1, 2], serialization="portable")
        await dbos.write_stream("s", 3)

    async with dbos.launched():
        with SetWorkflowID("fmt-1"):
            await writer()
        assert await dbos.get_all_events("fmt-1") == {"d": 2, "e": {"v": 1}}
        assert [v async for v in dbos.read_stream("fmt-1", "s")] == [[1, 2], 3]
    events = await query(
        dbos_url,
        "SELECT key, serialization FROM {t}workflow_events WHERE workflow_uuid = %s ORDER BY key",
        "fmt-1",
    )
    assert events == [("d", "py_pickle"), ("e", "portable_json")]
    stream = await query(
        dbos_url,
        'SELECT serialization FROM {t}streams WHERE workflow_uuid = %s ORDER BY "offset"',
        "fmt-1",
    )
    assert [s[0] for s in stream] == ["portable_json", "py_pickle"]
