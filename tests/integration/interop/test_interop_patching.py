"""Patch markers shared with the official ``dbos`` 3.4 package, both ways.

One side runs a patched workflow (``if patch("fix"): patch_new else patch_old``, then
``patch_after``) and dies inside ``patch_after``; the other side, with the same patched
code, replays it: the marker ``DBOS.patch-fix`` the first wrote must be read as "patched"
(``patch_new`` replayed, not run, and no nondeterminism error), and only ``patch_after``
runs again. And a history the official SDK recorded *before* the patch existed (no
marker) replays under dbos_trio's patched code down the old branch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from interop_support import rows, run_official

from dbos_trio import DBOS, Config, SetWorkflowID
from dbos_trio.testing import CrashPoint, run_until_crash

pytestmark = pytest.mark.interop

DRIVER = Path(__file__).resolve().parent / "official" / "patch_driver.py"
APP_NAME, APP_VERSION = "patch-interop", "patch-v1"  # as in the official driver


class Patched:
    """Our side of the application, mirroring the official driver's patched generation."""

    def __init__(self, url: str, executor_id: str) -> None:
        self.runs: dict[str, int] = {"patch_old": 0, "patch_new": 0, "patch_after": 0}
        self.dbos = DBOS(
            Config(
                app_name=APP_NAME,
                database_url=url,
                app_version=APP_VERSION,
                executor_id=executor_id,
            )
        )
        dbos = self.dbos

        def step(name: str) -> Any:
            @dbos.step(name=name)
            async def body(tag: str) -> str:
                self.runs[name] += 1
                return f"{name}-{tag}"

            return body

        patch_old, patch_new, patch_after = (
            step("patch_old"),
            step("patch_new"),
            step("patch_after"),
        )

        @dbos.workflow(name="patch_interop")
        async def patch_interop(tag: str) -> list[str]:
            first = await patch_new(tag) if await dbos.patch("fix") else await patch_old(tag)
            return [first, await patch_after(tag)]

        self.workflow = patch_interop


async def steps(url: str, workflow_id: str) -> list[tuple[Any, ...]]:
    return await rows(
        url,
        "SELECT function_id, function_name, output IS NULL FROM dbos.operation_outputs "
        "WHERE workflow_uuid = %s ORDER BY function_id",
        workflow_id,
    )


async def test_official_replays_a_workflow_dbos_trio_patched_and_crashed(
    url: str, official_python: Path
) -> None:
    app = Patched(url, executor_id="crashed-trio")
    async with run_until_crash(app.dbos, CrashPoint.before_step("trio-patched", 3)) as run:
        with SetWorkflowID("trio-patched"):
            await app.dbos.start_workflow(app.workflow, "trio")
        await run.wait()
    assert run.crashed_before
    assert app.runs == {"patch_old": 0, "patch_new": 1, "patch_after": 1}
    assert await steps(url, "trio-patched") == [
        (1, "DBOS.patch-fix", True),  # the marker, as the official SDK writes it: no output
        (2, "patch_new", False),
    ]
    recovered = await run_official(
        official_python, "recover", url, "trio-patched", "patched", driver=DRIVER
    )
    assert recovered == {
        "result": ["patch_new-trio", "patch_after-trio"],
        "runs": {"patch_old": 0, "patch_new": 0, "patch_after": 1},
    }
    assert [s[1] for s in await steps(url, "trio-patched")] == [
        "DBOS.patch-fix",
        "patch_new",
        "patch_after",
    ]


async def test_dbos_trio_replays_a_workflow_official_patched_and_crashed(
    url: str, official_python: Path
) -> None:
    crashed = await run_official(
        official_python, "crash", url, "official-patched", "patched", driver=DRIVER
    )
    assert crashed["runs"] == {"patch_old": 0, "patch_new": 1, "patch_after": 1}
    assert await steps(url, "official-patched") == [
        (1, "DBOS.patch-fix", True),
        (2, "patch_new", False),
    ]
    app = Patched(url, executor_id="trio-recoverer")
    async with app.dbos.launched():
        await app.dbos.resume_workflow("official-patched")
        handle = await app.dbos.retrieve_workflow("official-patched")
        assert await handle.get_result() == ["patch_new-official", "patch_after-official"]
    assert app.runs == {"patch_old": 0, "patch_new": 0, "patch_after": 1}


async def test_dbos_trio_patched_code_replays_an_official_history_from_before_the_patch(
    url: str, official_python: Path
) -> None:
    await run_official(official_python, "crash", url, "official-old", "old", driver=DRIVER)
    assert [s[1] for s in await steps(url, "official-old")] == ["patch_old"]
    app = Patched(url, executor_id="trio-recoverer")
    async with app.dbos.launched():
        await app.dbos.resume_workflow("official-old")
        handle = await app.dbos.retrieve_workflow("official-old")
        assert await handle.get_result() == ["patch_old-official", "patch_after-official"]
    assert app.runs == {"patch_old": 0, "patch_new": 0, "patch_after": 1}
    assert [s[1] for s in await steps(url, "official-old")] == ["patch_old", "patch_after"]
