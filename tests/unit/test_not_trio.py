"""``launched()`` under asyncio says what to do instead, before anything connects.

``asyncio.run(main())`` around ``dbos.launched()`` gave Trio's bare "must be called from
async context", with no hint that dbos_trio runs on Trio. Run in a fresh interpreter, as a
user's program would be: a test process where trio-asyncio was imported has asyncio's
event loop policy replaced.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """
import asyncio, sys
from dbos_trio import DBOS, Config, DBOSException

dbos = DBOS(Config(app_name="asyncio-user", database_url="sqlite:///" + sys.argv[1]))

async def main():
    async with dbos.launched():
        raise AssertionError("launched under asyncio")

try:
    asyncio.run(main())
except DBOSException as refused:
    print(refused)
"""


def test_launching_under_asyncio_names_trio_run_and_the_asyncio_steps(tmp_path: Path) -> None:
    database = tmp_path / "never-made.sqlite"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(database)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "trio.run(main), not asyncio.run(main)" in done.stdout
    assert "asyncio=True" in done.stdout
    assert not database.exists()  # refused before anything connected
