"""A huge value another SDK wrote is shown by the faces without being read whole.

A 50 MB workflow output and step output, and inputs, an event, a message and a stream
value over the preview threshold, are written straight into the rows by SQL (as any SDK
could write them). ``dbos-trio workflow get`` / ``workflow steps`` and the dashboard's
workflow page show each as a preview with its size, and every value that crossed from the
database to the process while they did — measured at the statement runner, where the
driver's rows enter the shared backend code — is at most the preview threshold: the bounded
reads (``dbos_trio._sysdb.bounded``) returned only the preview's characters of each. The
API's read of the same row, as a control, fetches the 50 MB whole (the meter sees it).
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import trio

from dbos_trio import Client
from dbos_trio._core.previews import PREVIEW_CHARS, PREVIEW_THRESHOLD_BYTES, PayloadPreview
from dbos_trio._ops import inspect
from dbos_trio._sysdb.postgres.statements import PostgresStatements
from dbos_trio._sysdb.sqlite.statements import SQLiteStatements
from dbos_trio.cli._main import main
from dbos_trio.dashboard import DashboardSettings, serve

from support.backends import execute
from support.dashboard_support import Browserless

HUGE_BYTES = 50 * 1024 * 1024
LARGE_BYTES = 3 * PREVIEW_THRESHOLD_BYTES  # over the threshold, cheaper than 50 MB
WORKFLOW = "huge-1"


def _text(size: int) -> str:
    # Base64 of random bytes, as a pickle is stored: nothing for TOAST to compress away.
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()[:size]


HUGE = _text(HUGE_BYTES)
LARGE = _text(LARGE_BYTES)


class FetchMeter:
    """The largest text (or bytes) value in any row a statement runner returned while
    installed: what crossed from the database into the process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.largest = 0
        self.values = 0
        for runner in (PostgresStatements, SQLiteStatements):
            for method in ("one", "all", "query"):
                monkeypatch.setattr(runner, method, self._metered(getattr(runner, method)))

    def _metered(self, original: Any) -> Any:
        meter = self

        async def metered(runner: Any, *args: Any, **kwargs: Any) -> Any:
            found = await original(runner, *args, **kwargs)
            rows = [] if found is None else [found] if isinstance(found, tuple) else found
            for row in rows:
                for value in row:
                    if isinstance(value, str | bytes):
                        meter.values += 1
                        meter.largest = max(meter.largest, len(value))
            return found

        return metered


async def _write_rows(url: str) -> None:
    await execute(
        url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, inputs, serialization, "
        "created_at, updated_at) VALUES (%s, 'SUCCESS', 'other_sdk', %s, 'py_pickle', 1, 2)",
        WORKFLOW,
        LARGE,
    )
    await execute(
        url,
        "INSERT INTO {t}workflow_output (workflow_uuid, output) VALUES (%s, %s)",
        WORKFLOW,
        HUGE,
    )
    await execute(
        url,
        "INSERT INTO {t}operation_outputs (workflow_uuid, function_id, function_name, output, "
        "serialization) VALUES (%s, 1, 'fetch', %s, 'py_pickle'), (%s, 2, 'small', %s, "
        "'portable_json')",
        WORKFLOW,
        HUGE,
        WORKFLOW,
        '"just this"',
    )
    for statement in (
        "INSERT INTO {t}workflow_events (workflow_uuid, key, value, serialization) "
        "VALUES (%s, 'report', %s, 'py_pickle')",
        "INSERT INTO {t}notifications (destination_uuid, topic, message, serialization) "
        "VALUES (%s, 'mail', %s, 'py_pickle')",
        'INSERT INTO {t}streams (workflow_uuid, key, value, "offset", serialization) '
        "VALUES (%s, 'log', %s, 0, 'py_pickle')",
    ):
        await execute(url, statement, WORKFLOW, LARGE)


@pytest.fixture(scope="module")
def huge_database(module_database_url: str) -> Iterator[str]:
    """The module's database, with the rows another SDK wrote (once per backend)."""
    trio.run(_write_rows, module_database_url)
    yield module_database_url


def _assert_preview(preview: Any, size: int) -> None:
    assert isinstance(preview, PayloadPreview), preview
    assert preview.size == size and preview.format == "py_pickle"
    assert len(preview.head) == PREVIEW_CHARS


async def test_the_faces_reads_fetch_a_huge_value_only_as_its_preview(
    huge_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Client(huge_database, use_listen_notify=False) as client:
        meter = FetchMeter(monkeypatch)
        shown = await inspect.get_workflow_status(client._reach, WORKFLOW, previews=True)
        steps = await inspect.list_workflow_steps(client._reach, WORKFLOW, previews=True)
        faces = meter.largest
        assert shown is not None
        _assert_preview(shown.output, HUGE_BYTES)
        _assert_preview(shown.input, LARGE_BYTES)
        _assert_preview(steps[0].output, HUGE_BYTES)
        assert steps[1].output == "just this"  # under the threshold: whole, decoded
        # What came over was the preview's characters, not the values.
        assert 0 < faces <= PREVIEW_CHARS < PREVIEW_THRESHOLD_BYTES

        # The control: the API reads the value itself, and the meter sees all of it.
        whole = await inspect.get_workflow_status(client._reach, WORKFLOW)
        assert whole is not None and whole.output == HUGE  # undecodable: kept as stored
        assert meter.largest == HUGE_BYTES


async def test_the_dashboard_page_shows_each_huge_value_as_its_start_and_size(
    huge_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = Client(huge_database, use_listen_notify=False)
    async with client, trio.open_nursery() as nursery:
        base = await nursery.start(serve, client._require("dashboard"), DashboardSettings(port=0))
        meter = FetchMeter(monkeypatch)
        page = (await Browserless(base).get("/workflow?id=" + quote(WORKFLOW))).text
        nursery.cancel_scope.cancel()
    notes = re.findall(r"([\d,]+) bytes stored as py_pickle: only its start is shown", page)
    # Inputs, output, the step's output, the event, the message and the stream value.
    assert sorted(notes) == sorted([f"{HUGE_BYTES:,}"] * 2 + [f"{LARGE_BYTES:,}"] * 4)
    assert HUGE[:PREVIEW_CHARS] in page and HUGE[PREVIEW_CHARS : PREVIEW_CHARS + 50] not in page
    assert len(page) < 20 * PREVIEW_CHARS * 6
    assert 0 < meter.largest <= PREVIEW_CHARS


def test_workflow_get_and_steps_print_previews_having_fetched_only_them(
    huge_database: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # In this process (not a subprocess), so the meter sees what the command fetched.
    meter = FetchMeter(monkeypatch)
    assert main(["workflow", "get", WORKFLOW, "-s", huge_database, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["output"]["size"] == HUGE_BYTES and shown["input"]["size"] == LARGE_BYTES
    assert shown["output"]["head"] == HUGE[:PREVIEW_CHARS]
    assert main(["workflow", "steps", WORKFLOW, "-s", huge_database, "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)
    assert steps[0]["output"] == {
        "size": HUGE_BYTES,
        "format": "py_pickle",
        "head": HUGE[:PREVIEW_CHARS],
    }
    assert main(["workflow", "get", WORKFLOW, "-s", huge_database]) == 0
    assert f"<{HUGE_BYTES:,} bytes stored as py_pickle, not decoded to show" in (
        capsys.readouterr().out
    )
    assert 0 < meter.largest <= PREVIEW_CHARS
