"""Large values through a payload store: the rows hold references, the store holds each
distinct value once, and every read path (recovery, results, step replay, messages,
events) sees the values as if they were inline (docs/payload-store.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dbos_trio import DBOS, Client, DBOSPayloadError, DirectoryPayloadStore, SetWorkflowID

from support.backends import query
from support.waiting import wait_until

MakeDBOS = Callable[..., DBOS]
REFERENCE = "dbos_trio_payload:1:"
BIG = bytes(range(256)) * 4096  # 1 MiB
MESSAGE = b"m" * 300_000


def register(dbos: DBOS, runs: list[bytes]) -> Any:
    """The same application in every launch: a crash is the end of one launch."""

    @dbos.step()
    async def reverse(data: bytes) -> bytes:
        return data[::-1]

    @dbos.workflow()
    async def carry(data: bytes) -> bytes:
        reversed_data = await reverse(data)
        runs.append(reversed_data)
        go = await dbos.recv("go", timeout_seconds=3600)
        await dbos.set_event("reversed", reversed_data)
        return reversed_data + go

    return carry


def stored_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file())


async def test_large_values_are_stored_once_and_read_back_on_every_path_after_a_crash(
    make_dbos: MakeDBOS, dbos_url: str, tmp_path: Path
) -> None:
    root = tmp_path / "payloads"
    store = DirectoryPayloadStore(root)
    runs: list[bytes] = []
    first = make_dbos(payload_store=store)
    carry = register(first, runs)
    async with first.launched():
        for workflow_id in ("big-a", "big-b"):
            with SetWorkflowID(workflow_id):
                await first.start_workflow(carry, BIG)

        async def both_waiting() -> bool:
            return len(runs) == 2  # each ran its step (recorded) and goes on to recv

        await wait_until(both_waiting, what="both workflows reached recv")
    # Both rows are PENDING, as after a crash; they hold references, not the megabyte.
    inputs = await query(dbos_url, "SELECT inputs FROM {t}workflow_input ORDER BY workflow_uuid")
    assert [row[0][: len(REFERENCE)] for row in inputs] == [REFERENCE, REFERENCE]
    assert inputs[0][0] == inputs[1][0] and len(inputs[0][0]) < 120
    steps = await query(
        dbos_url, "SELECT output FROM {t}operation_outputs WHERE function_name LIKE %s", "%reverse"
    )
    assert len(steps) == 2 and all(row[0].startswith(REFERENCE) for row in steps)
    # One file for the shared input, one for the shared step output.
    assert len(stored_files(root)) == 2

    second = make_dbos(payload_store=store)
    register(second, runs)
    async with second.launched():
        await second.send("big-a", MESSAGE, "go")
        await second.send("big-b", b"small", "go")
        result_a = await (await second.retrieve_workflow("big-a")).get_result()
        result_b = await (await second.retrieve_workflow("big-b")).get_result()
        event = await second.get_event("big-a", "reversed")

    # Recovery replayed the step from its stored output and read the inputs back whole.
    assert runs == [BIG[::-1]] * 4
    assert result_a == BIG[::-1] + MESSAGE and result_b == BIG[::-1] + b"small"
    assert event == BIG[::-1]
    outputs = await query(dbos_url, "SELECT output FROM {t}workflow_output")
    assert len(outputs) == 2 and all(row[0].startswith(REFERENCE) for row in outputs)
    # + the message to big-a and the two distinct outputs (the event shares the step's).
    assert len(stored_files(root)) == 5

    # A client with the store reads the values; one without says where they are.
    async with Client(dbos_url, payload_store=store) as client:
        assert await (await client.retrieve_workflow("big-a")).get_result() == result_a
    async with Client(dbos_url) as client:
        with pytest.raises(
            DBOSPayloadError, match=r"stored in the payload store: sha256 [0-9a-f]{64}"
        ):
            await (await client.retrieve_workflow("big-a")).get_result()


async def test_a_missing_or_corrupt_entry_is_an_error_naming_its_hash_and_file(
    make_dbos: MakeDBOS, dbos_url: str, tmp_path: Path
) -> None:
    store = DirectoryPayloadStore(tmp_path / "payloads")
    dbos = make_dbos(payload_store=store)

    @dbos.workflow()
    async def echo(data: bytes) -> bytes:
        return data + b"!"

    async with dbos.launched():
        with SetWorkflowID("echo"):
            assert await echo(BIG) == BIG + b"!"
    [(reference,)] = await query(dbos_url, "SELECT output FROM {t}workflow_output")
    digest = reference.split(":")[2]
    path = store.path_of(digest)

    async with Client(dbos_url, payload_store=store) as client:
        path.write_bytes(b"not what was stored")
        handle = await client.retrieve_workflow("echo")
        with pytest.raises(DBOSPayloadError, match=f"{digest}.*corrupt.*{path}"):
            await handle.get_result()
        path.unlink()
        with pytest.raises(DBOSPayloadError, match=f"{digest}.*missing.*{path}"):
            await handle.get_result()
