"""Workflow bundles carry the payload store entries their rows reference (version 2).

A workflow whose inputs, step output, event, message and output went to a payload store is
exported through that store: the bundle embeds each entry once, by hash, and imports into
a fresh database of either backend with a store of its own, where every row is byte for
byte the source's and every entry is in the target's store, so the workflow's values read
back there. Imported with no store, such a bundle is refused naming the missing store;
malformed entries are refused; nothing is written either way. Exported without a store,
the references are copied as they are (version 1), as before, and the CLI says so.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, Client, DBOSException, DirectoryPayloadStore, SetWorkflowID
from dbos_trio._ops import bundles
from dbos_trio.cli._main import main

from support.backends import _fresh_database, execute
from support.bundle_rows import rows_of
from support.waiting import HANG_GUARD

LARGE = b"\x00\x01payload" * 30_000  # 270 kB: over the 64 KiB threshold
REFERENCE = "dbos_trio_payload:1:"


def build(make_dbos: Callable[..., DBOS], store: DirectoryPayloadStore) -> tuple[DBOS, Any]:
    dbos = make_dbos(payload_store=store)

    @dbos.step()
    async def reverse(data: bytes) -> bytes:
        return data[::-1]

    @dbos.workflow()
    async def carry(data: bytes) -> bytes:
        reversed_data = await reverse(data)
        await dbos.set_event("reversed", reversed_data)
        extra = await dbos.recv("more", timeout_seconds=HANG_GUARD)
        return reversed_data + extra

    return dbos, carry


def files(root: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in root.rglob("*") if path.is_file()}


async def test_a_bundle_exported_through_a_store_imports_its_entries_and_rows_into_either_backend(
    make_dbos: Callable[..., DBOS],
    dbos_url: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    postgres_template: str,  # made before the test's Trio run: the targets copy them
    sqlite_template: Path,
) -> None:
    source_store = DirectoryPayloadStore(tmp_path / "source-store")
    dbos, carry = build(make_dbos, source_store)
    async with dbos.launched():
        with SetWorkflowID("big"):
            handle = await dbos.start_workflow(carry, LARGE)
        await dbos.send("big", LARGE[:70_000], "more")
        expected = await handle.get_result()
    stored = files(tmp_path / "source-store")
    assert len(stored) == 4  # inputs, step output (the event: the same bytes), message, output
    async with Client(dbos_url, payload_store=source_store) as client:
        document = await bundles.export_workflows(client._reach, ["big"])
    async with Client(dbos_url) as client:
        plain = await bundles.export_workflows(client._reach, ["big"])
    assert plain["version"] == 1 and "payloads" not in plain
    assert bundles.unembedded_references(plain) == 4
    assert document["version"] == 2 and bundles.unembedded_references(document) == 0
    assert {k: base64.b64decode(v) for k, v in document["payloads"].items()} == stored
    document = json.loads(json.dumps(document))  # as a file carries it
    source = await rows_of(dbos_url, ("big",))
    assert source["workflow_output"][0][1].startswith(REFERENCE)

    for target in ("sqlite", "postgres"):
        (tmp_path / target).mkdir()
        target_store = DirectoryPayloadStore(tmp_path / target / "store")
        with _fresh_database(target, request, tmp_path / target) as url:
            async with Client(url, use_listen_notify=False) as client:
                # No store to put the entries in: refused, naming it, nothing written.
                with pytest.raises(DBOSException, match="no payload store: give it one"):
                    await bundles.import_bundle(client._reach, document)
                assert await client.list_workflows() == []
            async with Client(url, use_listen_notify=False, payload_store=target_store) as client:
                assert await bundles.import_bundle(client._reach, document) == ["big"]
                assert await rows_of(url, ("big",)) == source, target
                assert files(tmp_path / target / "store") == stored, target
                # The values read back from the target's own store.
                imported = await client.retrieve_workflow("big")
                assert await imported.get_result() == expected
                assert await client.get_event("big", "reversed") == LARGE[::-1]
                # Refused ids write no entries either.
                for entry in (tmp_path / target / "store").rglob("*"):
                    if entry.is_file():
                        entry.unlink()
                with pytest.raises(DBOSException, match="big already exist"):
                    await bundles.import_bundle(client._reach, document)
                assert files(tmp_path / target / "store") == {}
                await bundles.import_bundle(client._reach, document, overwrite=True)
                assert await rows_of(url, ("big",)) == source, target
                assert files(tmp_path / target / "store") == stored, target


async def test_bad_payload_sections_are_refused_before_anything_is_written(
    dbos_url: str, tmp_path: Path
) -> None:
    status = {"workflow_uuid": "w", "status": "SUCCESS", "name": "n"}
    good = base64.b64encode(b"x").decode()
    sha_of_x = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
    cases = [
        ({"version": 2}, "needs its 'payloads' section"),
        ({"version": 2, "payloads": []}, "'payloads' must be an object"),
        ({"version": 2, "payloads": {"ABC": good}}, "sha256 in lowercase hex"),
        ({"version": 2, "payloads": {sha_of_x: "not base64!"}}, "not base64"),
        ({"version": 2, "payloads": {"0" * 64: good}}, "do not hash to its key"),
        ({"version": 3, "payloads": {}}, "version 3 is not one this dbos-trio reads"),
    ]
    store = DirectoryPayloadStore(tmp_path / "store")
    async with Client(dbos_url, use_listen_notify=False, payload_store=store) as client:
        for extra, problem in cases:
            document = {"format": bundles.BUNDLE_FORMAT, "workflows": [{"status": status}]}
            with pytest.raises(DBOSException, match=problem):
                await bundles.import_bundle(client._reach, {**document, **extra})
        assert await client.list_workflows() == []
    assert files(tmp_path / "store") == {}


def test_the_cli_exports_with_the_store_and_imports_into_another(
    dbos_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A row and its entry, written as another process would have: by SQL and a put.
    source_store = tmp_path / "source-store"
    data = b'"' + b"v" * 100_000 + b'"'
    sha256 = hashlib.sha256(data).hexdigest()
    DirectoryPayloadStore(source_store).put(sha256, data)
    trio.run(
        execute,
        dbos_url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, output, serialization, "
        "created_at, updated_at) VALUES ('cli-1', 'SUCCESS', 'n', %s, 'portable_json', 1, 2)",
        f"{REFERENCE}{sha256}:{len(data)}",
    )
    bundle = tmp_path / "b.json"
    export = ["workflow", "export", "cli-1", "-s", dbos_url, "-O", str(bundle)]
    assert main(export) == 0
    assert "reference 1 payload store entry not carried by this bundle" in capsys.readouterr().err
    assert json.loads(bundle.read_text())["version"] == 1
    assert main([*export, "--payload-store", str(source_store)]) == 0
    assert "exported 1 workflow(s) and 1 payload store entry" in capsys.readouterr().err
    written = json.loads(bundle.read_text())
    assert written["version"] == 2
    assert written["payloads"] == {sha256: base64.b64encode(data).decode()}

    target = tmp_path / "target-store"
    target.mkdir()
    importing = ["workflow", "import", str(bundle), "-s", dbos_url, "--overwrite"]
    assert main(importing) == 1  # no store named: refused, nothing written
    assert "no payload store: give it one (the CLI's --payload-store DIR" in (
        capsys.readouterr().err
    )
    assert files(target) == {}
    assert main([*importing, "--payload-store", str(target)]) == 0
    capsys.readouterr()
    assert files(target) == {sha256: data}
    shown = ["workflow", "get", "cli-1", "-s", dbos_url, "--json", "--payload-store", str(target)]
    assert main(shown) == 0
    output = json.loads(capsys.readouterr().out)["output"]
    assert output["size"] == len(data) and output["head"] == data[:500].decode()
