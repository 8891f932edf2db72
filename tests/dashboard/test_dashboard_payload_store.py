"""A workflow page shows a value kept in the payload store when the dashboard has the
store, and its hash and size when it has not (docs/how-to/payload-store.md)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from dbos_trio import DBOS, Config, DirectoryPayloadStore
from dbos_trio.testing import sqlite_url

from support.dashboard_support import Browserless

MARKER = "only-in-a-resolved-value"


def app(url: str, store: DirectoryPayloadStore | None) -> tuple[DBOS, object]:
    dbos = DBOS(
        Config(
            app_name="dash-store",
            database_url=url,
            app_version="v1",
            payload_store=store,
            payload_store_threshold=1024,
        )
    )

    @dbos.workflow(name="echo")
    async def echo(text: str) -> int:
        return len(text)

    return dbos, echo


async def test_a_stored_value_is_shown_with_the_store_and_named_without_it(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path / "dash.sqlite")
    value = "x" * 4000 + MARKER  # over the store's threshold, under the preview's
    dbos, echo = app(url, DirectoryPayloadStore(tmp_path / "payloads"))
    async with dbos.launched():
        handle = await dbos.start_workflow(echo, value)  # type: ignore[arg-type]
        await handle.get_result()
        browser = Browserless(await dbos.serve_dashboard(port=0, allow_pickle=True))
        page = (await browser.get("/workflow?id=" + quote(handle.workflow_id))).text
    assert MARKER in page

    storeless, _ = app(url, None)
    async with storeless.launched():
        browser = Browserless(await storeless.serve_dashboard(port=0, allow_pickle=True))
        page = (await browser.get("/workflow?id=" + quote(handle.workflow_id))).text
    assert MARKER not in page
    assert "stored in the payload store: sha256 " in page
    assert "start the dashboard with --payload-store to show it" in page
