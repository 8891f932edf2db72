"""``launched()`` under asyncio says what to do instead, before anything connects.

``asyncio.run(main())`` around ``dbos.launched()`` gave Trio's bare "must be called from
async context", with no hint that dbos_trio runs on Trio.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dbos_trio import DBOS, Config, DBOSException


def test_launching_under_asyncio_names_trio_run_and_the_asyncio_steps(tmp_path: Path) -> None:
    database = tmp_path / "never-made.sqlite"
    dbos = DBOS(Config(app_name="asyncio-user", database_url=f"sqlite:///{database}"))

    async def main() -> None:
        async with dbos.launched():
            raise AssertionError("launched under asyncio")

    with pytest.raises(DBOSException) as refused:
        asyncio.run(main())
    assert "trio.run(main), not asyncio.run(main)" in str(refused.value)
    assert "asyncio=True" in str(refused.value)
    assert not database.exists()  # refused before anything connected
