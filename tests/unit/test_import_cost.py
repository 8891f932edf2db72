"""Importing dbos_trio loads no test framework.

``trio.testing`` imports pytest where it is installed; the engine only needs to recognise
a MockClock, which cannot exist unless the application imported ``trio.testing`` itself.
Checked in a fresh interpreter (this one has pytest loaded already).
"""

from __future__ import annotations

import subprocess
import sys

import trio
import trio.testing

from dbos_trio._engine.runtime.pacing import on_virtual_time


def test_importing_dbos_trio_does_not_import_pytest_nor_trio_testing() -> None:
    code = (
        "import sys, dbos_trio; "
        "print(sorted(m for m in ('pytest', 'trio.testing') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_autojumping_mock_clock_is_still_recognised() -> None:
    seen: list[bool] = []

    async def look() -> None:
        seen.append(on_virtual_time())

    trio.run(look, clock=trio.testing.MockClock(autojump_threshold=0))
    trio.run(look, clock=trio.testing.MockClock())  # not autojumping
    trio.run(look)
    assert seen == [True, False, False]
