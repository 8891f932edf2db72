"""The faces that show values to a person (CLI, dashboard) get a preview of a large
payload — its size and first characters — instead of decoding and printing it whole;
the API still returns whole values. A large value kept in a payload store is previewed
from the start of its entry, which is then never read whole to be shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from dbos_trio import DBOS, DirectoryPayloadStore, SetWorkflowID
from dbos_trio._core.previews import PREVIEW_CHARS, PREVIEW_THRESHOLD_BYTES, PayloadPreview
from dbos_trio._ops import inspect
from dbos_trio.cli import _format as cli_format

from support.dashboard_support import Browserless

MakeDBOS = Callable[..., DBOS]
LARGE = "L" * (2 * PREVIEW_THRESHOLD_BYTES)


async def test_a_large_payload_is_previewed_for_the_faces_and_whole_for_the_api(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    @dbos.step()
    async def big_step(value: str) -> str:
        return value

    @dbos.workflow()
    async def big(value: str) -> str:
        return await big_step(value)

    async with dbos.launched():
        with SetWorkflowID("big-1"):
            await big(LARGE)
        whole = await inspect.get_workflow_status(dbos._reach, "big-1")
        shown = await inspect.get_workflow_status(dbos._reach, "big-1", previews=True)
        steps = await inspect.list_workflow_steps(dbos._reach, "big-1", previews=True)

    assert whole is not None and whole.output == LARGE and whole.input["args"] == (LARGE,)
    assert shown is not None
    for preview in (shown.output, steps[0].output):
        assert isinstance(preview, PayloadPreview)
        assert preview.format == "py_pickle" and preview.size > len(LARGE)
        assert len(preview.head) == PREVIEW_CHARS
    assert isinstance(shown.input, PayloadPreview)
    detail = cli_format.workflow_detail(shown, steps, decoded=True)
    assert "stored as py_pickle, not decoded to show" in detail
    assert len(detail) < 10 * PREVIEW_CHARS  # not the value: its preview
    document = json.loads(cli_format.workflow_json(shown, steps))
    assert document["output"]["size"] == shown.output.size
    assert set(document["output"]) == {"size", "format", "head"}


class CountingStore(DirectoryPayloadStore):
    """A directory store that counts whole reads and partial ones (``head``)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.gets: list[str] = []
        self.heads: list[str] = []

    def get(self, sha256: str) -> bytes:
        self.gets.append(sha256)
        return super().get(sha256)

    def head(self, sha256: str, size: int) -> bytes:
        self.heads.append(sha256)
        return super().head(sha256, size)


async def test_a_large_stored_value_is_previewed_from_the_start_of_its_entry_only(
    make_dbos: MakeDBOS, tmp_path: Path
) -> None:
    store = CountingStore(tmp_path / "payloads")
    dbos = make_dbos(payload_store=store)

    @dbos.step()
    async def big_step(value: str) -> str:
        return value

    @dbos.workflow()
    async def big(value: str) -> str:
        return await big_step(value)

    async with dbos.launched():
        with SetWorkflowID("stored-big"):
            await big(LARGE)
        store.gets.clear()
        shown = await inspect.get_workflow_status(dbos._reach, "stored-big", previews=True)
        steps = await inspect.list_workflow_steps(dbos._reach, "stored-big", previews=True)
        page = (
            await Browserless(await dbos.serve_dashboard(port=0, allow_pickle=True)).get(
                "/workflow?id=stored-big"
            )
        ).text
        assert store.gets == []  # no entry was read whole to be shown
        whole = await inspect.get_workflow_status(dbos._reach, "stored-big")
        assert store.gets  # the API reads it whole, as it must
    assert shown is not None and whole is not None and whole.output == LARGE
    for preview in (shown.output, shown.input, steps[0].output):
        assert isinstance(preview, PayloadPreview) and preview.size > len(LARGE)
        assert len(preview.head) == PREVIEW_CHARS
    assert len(store.heads) >= 5  # input, output, step: by the ops call and by the page
    assert page.count("bytes stored as py_pickle: only its start is shown") == 3
