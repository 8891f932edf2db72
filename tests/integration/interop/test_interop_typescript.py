"""The official TypeScript SDK's client reads a dbos_trio workflow's typed portable result
as the documented plain JSON (docs/input-and-trust.md#typed-portable-values): a dataclass
is an object, a datetime an ISO string, a Decimal and a UUID strings, an Enum its value,
bytes base64.

The SDK (``@dbos-inc/dbos-sdk``, pinned) is installed once with npm into a directory of
its own under the cache and driven as a Node.js subprocess; without ``node`` and ``npm``,
or without the package index, the test is skipped with the reason, never failed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
import trio
from typed_basket import ITEM, ITEM_JSON, register_basket_total

from dbos_trio import DBOS, Config, SetWorkflowID

pytestmark = pytest.mark.interop

TS_SDK = "@dbos-inc/dbos-sdk@5.3.0"
COMPLETE_MARKER = ".dbos-trio-complete"
READER = """
const { DBOSClient } = require('@dbos-inc/dbos-sdk');
(async () => {
  const client = await DBOSClient.create({ systemDatabaseUrl: process.argv[2] });
  try {
    const result = await client.retrieveWorkflow(process.argv[3]).getResult();
    console.log(JSON.stringify({ result }));
  } finally {
    await client.destroy();
  }
})().catch((error) => { console.error(error); process.exit(1); });
"""


@pytest.fixture(scope="module")
def typescript_sdk() -> Path:
    """A directory where ``node read_result.cjs URL ID`` runs the TypeScript SDK's client."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to run the official TypeScript SDK")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = cache / "dbos_trio" / "ts-sdk-5.3.0"
    home.mkdir(parents=True, exist_ok=True)
    with open(home.parent / ".ts-sdk-5.3.0.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time, across processes
        if not (home / COMPLETE_MARKER).exists():
            (home / "package.json").write_text('{"name": "dbos-trio-interop", "private": true}')
            try:
                subprocess.run(
                    ["npm", "install", "--silent", "--no-audit", "--no-fund", TS_SDK],
                    cwd=home,
                    check=True,
                    capture_output=True,
                    timeout=600,
                )
            except (OSError, subprocess.SubprocessError) as error:
                pytest.skip(f"cannot install {TS_SDK} with npm (needs the npm registry): {error}")
            (home / COMPLETE_MARKER).write_text(TS_SDK + "\n")
    (home / "read_result.cjs").write_text(READER)
    return home


async def test_the_typescript_client_reads_a_typed_result_as_the_documented_json(
    url: str, typescript_sdk: Path
) -> None:
    dbos = DBOS(Config(app_name="portable-types-ts", database_url=url, app_version="v1"))
    basket_total = register_basket_total(dbos)
    async with dbos.launched():
        with SetWorkflowID("basket-ts"):
            assert (await basket_total([ITEM])).total == Decimal("12.30")

    done = await trio.run_process(
        ["node", "read_result.cjs", url, "basket-ts"],
        cwd=typescript_sdk,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    read = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert read["result"] == {"items": [ITEM_JSON], "total": "12.30"}
