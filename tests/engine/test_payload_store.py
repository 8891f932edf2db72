"""Large values through a payload store: the rows hold references, the store holds each
distinct value once, and every read path (recovery, results, step replay, messages,
events) sees the values as if they were inline (docs/how-to/payload-store.md)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSPayloadError,
    DirectoryPayloadStore,
    RetentionPolicy,
    SetWorkflowID,
)
from dbos_trio.testing import launched, sqlite_url

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
        await dbos.write_stream("chunks", reversed_data)
        await dbos.close_stream("chunks")
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
        streamed = [value async for value in second.read_stream("big-a", "chunks")]

    # Recovery replayed the step from its stored output and read the inputs back whole.
    assert runs == [BIG[::-1]] * 4
    assert result_a == BIG[::-1] + MESSAGE and result_b == BIG[::-1] + b"small"
    assert event == BIG[::-1] and streamed == [BIG[::-1]]
    for table, column in (("workflow_events", "value"), ("streams", "value")):
        values = await query(dbos_url, f"SELECT {column} FROM {{t}}{table}")
        assert any(row[0].startswith(REFERENCE) for row in values), table
    outputs = await query(dbos_url, "SELECT output FROM {t}workflow_output")
    assert len(outputs) == 2 and all(row[0].startswith(REFERENCE) for row in outputs)
    # + the message to big-a and the two distinct outputs (event, stream: the step's).
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


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def age(paths: list[Path], seconds: float) -> None:
    """Make entries look last used ``seconds`` ago (the collector reads file times)."""
    for path in paths:
        stamp = path.stat().st_mtime - seconds
        os.utime(path, (stamp, stamp))


async def test_the_cli_shows_a_stored_value_with_the_store_and_gc_removes_it_once_unreferenced(
    make_dbos: MakeDBOS, dbos_url: str, tmp_path: Path
) -> None:
    root = tmp_path / "payloads"
    store = DirectoryPayloadStore(root)
    dbos = make_dbos(payload_store=store, payload_store_threshold=4096)

    @dbos.workflow()
    async def echo(text: str) -> str:
        return text.upper()

    text = "payload " * 2_000  # 16 KB: stored, yet under the CLI's preview threshold
    async with dbos.launched():
        with SetWorkflowID("echo"):
            assert await echo(text) == text.upper()
    files = stored_files(root)
    assert len(files) == 2  # the input and the output

    # Without the store the CLI says where the values are; with it, it shows them.
    shown = run_cli("workflow", "get", "echo", "-s", dbos_url, "--allow-pickle")
    assert shown.returncode == 0, shown.stderr
    assert "stored in the payload store: sha256 " in shown.stdout
    assert "PAYLOAD PAYLOAD" not in shown.stdout
    shown = run_cli(
        "workflow", "get", "echo", "-s", dbos_url, "--allow-pickle", "--payload-store", str(root)
    )
    assert shown.returncode == 0, shown.stderr
    assert "PAYLOAD PAYLOAD" in shown.stdout and "stored in the payload store" not in shown.stdout

    # Referenced entries stay, however old; unreferenced ones within the grace period too.
    age(files, 7200)
    fresh = b"written for a row not yet committed"
    fresh_hash = hashlib.sha256(fresh).hexdigest()
    store.put(fresh_hash, fresh)
    gc = ["gc", "-s", dbos_url, "--payload-store", str(root), "--json"]
    kept = run_cli(*gc)
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout)["payloads_removed"] == 0
    assert len(stored_files(root)) == 3

    # Once the workflow is deleted, its entries go; the fresh one stays.
    async with dbos.launched():
        await dbos.delete_workflow("echo")
    removed = run_cli(*gc)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["payloads_removed"] == 2
    assert stored_files(root) == [store.path_of(fresh_hash)]
    # With no grace, an unreferenced entry goes at once.
    assert json.loads(run_cli(*gc, "--payload-grace", "0").stdout)["payloads_removed"] == 1


async def test_the_retention_policy_removes_the_entries_of_the_workflows_it_deletes(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    url = sqlite_url(tmp_path / "retention.sqlite")
    root = tmp_path / "payloads"
    store = DirectoryPayloadStore(root)
    policy = RetentionPolicy(max_age_seconds=3600, interval_seconds=600)
    dbos = DBOS(
        Config(app_name="retention", database_url=url, retention=policy, payload_store=store)
    )

    @dbos.workflow()
    async def keep(data: bytes) -> bytes:
        return data[:10]

    async with launched(dbos):
        with SetWorkflowID("early"):
            await keep(BIG)
        early = stored_files(root)
        assert len(early) == 1  # the input (the output is small)
        age(early, 7200)  # past the grace period (file times are wall-clock)
        await trio.sleep(1800)  # virtual
        with SetWorkflowID("later"):
            await keep(BIG[::-1])
        later = [path for path in stored_files(root) if path not in early]
        age(later, 7200)
        await trio.sleep(1800 + 700)  # "early" is past the age; a run has happened since
        # Its row deleted, its entry went too (the sweep runs in a worker thread, which the
        # virtual clock does not wait for); "later"'s is kept while referenced.
        await wait_until(lambda: stored_files(root) == later, what="early's entry removed")
        await trio.sleep(600)  # another run: "later" is still referenced
        assert stored_files(root) == later
