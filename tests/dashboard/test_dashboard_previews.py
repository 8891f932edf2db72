"""A workflow page shows a payload over the preview threshold as its start and size,
without decoding it (dbos_trio._core.previews), even where pickles may be decoded."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from dbos_trio._core.previews import PREVIEW_THRESHOLD_BYTES
from dbos_trio.testing import sqlite_url

from support.dashboard_support import Browserless, demo_app

MARKER = "only-in-a-decoded-value"


async def test_a_large_payload_is_shown_as_a_preview_with_its_size(tmp_path: Path) -> None:
    dbos, fns = demo_app(sqlite_url(tmp_path / "dash.sqlite"))
    large = {"head": "x" * PREVIEW_THRESHOLD_BYTES, "tail": MARKER}
    async with dbos.launched():
        handle = await dbos.start_workflow(fns["pickled"], large)
        await handle.get_result()
        small = await dbos.start_workflow(fns["pickled"], {"tail": MARKER})
        await small.get_result()
        trusted = Browserless(await dbos.serve_dashboard(port=0, allow_pickle=True))
        page = (await trusted.get("/workflow?id=" + quote(handle.workflow_id))).text
        small_page = (await trusted.get("/workflow?id=" + quote(small.workflow_id))).text
    assert "bytes stored as py_pickle: only its start is shown" in page
    assert MARKER not in page and len(page) < PREVIEW_THRESHOLD_BYTES
    assert MARKER in small_page  # under the threshold: decoded as before
