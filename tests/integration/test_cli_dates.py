"""Every command shows a time the same way, ``2026-12-02 17:36:34 UTC`` (``_format.when``):
``version list`` printed ISO 8601 (``2026-12-02T17:36:34+00:00``) and ``schedule list``
the stored text while ``workflow list`` printed the former."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import trio

from dbos_trio import DBOS, Config
from dbos_trio.cli._schedules import _fired

SHOWN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def test_a_stored_tick_time_is_shown_as_every_other_time() -> None:
    assert _fired("2026-12-02T17:36:34+00:00") == "2026-12-02 17:36:34 UTC"
    assert _fired("2026-12-02T18:36:34+01:00") == "2026-12-02 17:36:34 UTC"
    assert _fired(None) == "" and _fired("not a time") == "not a time"


async def test_version_list_shows_times_as_workflow_list_does(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'dates.sqlite'}"
    dbos = DBOS(Config(app_name="dates", database_url=url, app_version="v1"))

    @dbos.workflow()
    async def noop() -> None:
        return None

    async with dbos.launched():
        await noop()
    shown: dict[str, str] = {}
    for command in ("version", "workflow"):
        done = await trio.run_process(
            [sys.executable, "-m", "dbos_trio.cli", command, "list", "-s", url],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        shown[command] = done.stdout.decode()
    for output in shown.values():
        assert SHOWN.search(output), output
        assert not re.search(r"\dT\d\d:\d\d:\d\d", output), output
