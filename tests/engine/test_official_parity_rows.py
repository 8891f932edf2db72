"""Rows written as dbos 3.4 writes them, found different by porting its test suite
(issue 32). The scenarios are written anew for dbos_trio."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbos_trio import DBOS, SetWorkflowID

from support.backends import status_row

MakeDBOS = Callable[..., DBOS]


@pytest.mark.parametrize("app_id", [None, "app-7"])
async def test_a_workflow_row_stores_the_app_id_and_an_empty_one_when_unset(
    make_dbos: MakeDBOS, dbos_url: str, monkeypatch: pytest.MonkeyPatch, app_id: str | None
) -> None:
    """dbos 3.4 stores ``DBOS__APPID`` in ``application_id``, and "" (not NULL) when the
    variable is unset."""
    if app_id is None:
        monkeypatch.delenv("DBOS__APPID", raising=False)
    else:
        monkeypatch.setenv("DBOS__APPID", app_id)
    dbos = make_dbos()

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        with SetWorkflowID("w"):
            await noop()
        status = await dbos.get_workflow_status("w")
    expected = app_id or ""
    assert (await status_row(dbos_url, "w"))["application_id"] == expected
    assert status is not None and status.app_id == expected
