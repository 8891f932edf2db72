"""``dbos-trio check``, ``workflow export`` and ``workflow import`` as real subprocesses.

An application module (written to a temporary directory, imported by ``--app``) records
one finished and one PENDING workflow on each backend; version 2 of the module swaps its
two steps. ``check`` exits 0 for the same code and 1 for the swap, naming the divergence
and the new call's line (``--json`` too); the workflows exported to a bundle import into
a fresh SQLite file with every row and payload byte for byte, an import over existing ids
is refused, and ``check --bundle`` works with no database at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dbos_trio import SetWorkflowID
from dbos_trio.testing import sqlite_url

from support.backends import query
from support.waiting import HANG_GUARD

APP = """\
import os

from dbos_trio import DBOS, Config

dbos = DBOS(Config(app_name="cli-check", database_url=os.environ["CHECK_APP_URL"],
                   app_version="v1"))


@dbos.step(name="a")
async def a(x: int) -> int:
    return x + 1


@dbos.step(name="b")
async def b(x: int) -> int:
    return x * 10


@dbos.workflow(name="job")
async def job(x: int) -> list[object]:
    {body}
    await dbos.set_event("ready", True)
    got = await dbos.recv("go", timeout_seconds=3600)
    await dbos.write_stream("out", got)
    return [first, second, got]
"""
V1 = "first = await a(x)\n    second = await b(x)"
V2 = "second = await b(x)  # swapped\n    first = await a(x)"


def write_apps(where: Path) -> None:
    (where / "app_v1.py").write_text(APP.format(body=V1))
    (where / "app_v2.py").write_text(APP.format(body=V2))


def swapped_line(where: Path) -> str:
    lines = (where / "app_v2.py").read_text().splitlines()
    number = next(i for i, text in enumerate(lines, start=1) if text.endswith("# swapped"))
    return f"{where / 'app_v2.py'}:{number}"


def run_cli(where: Path, url: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DBOS_SYSTEM_DATABASE_URL", "DBOS_DATABASE_URL")
    }
    env["CHECK_APP_URL"] = url or sqlite_url(where / "unused.sqlite")
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=where,
        env=env,
    )


async def record(where: Path, url: str) -> None:
    os.environ["CHECK_APP_URL"] = url
    try:
        spec = importlib.util.spec_from_file_location(f"app_v1_{id(where)}", where / "app_v1.py")
        assert spec is not None and spec.loader is not None
        module: Any = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        del os.environ["CHECK_APP_URL"]
    dbos = module.dbos
    async with dbos.launched():
        with SetWorkflowID("done"):
            handle = await dbos.start_workflow(module.job, 1)
        await dbos.send("done", "go", "go")
        assert await handle.get_result() == [2, 10, "go"]
        with SetWorkflowID("waiting"):
            await dbos.start_workflow(module.job, 2)
        assert await dbos.get_event("waiting", "ready", timeout_seconds=HANG_GUARD) is True


async def test_check_exits_zero_for_the_same_code_and_one_for_swapped_steps(
    system_database_url: str, tmp_path: Path
) -> None:
    url = system_database_url
    write_apps(tmp_path)
    await record(tmp_path, url)
    same = run_cli(tmp_path, url, "check", "--app", "app_v1:dbos", "-s", url, "--finished", "5")
    assert same.returncode == 0, same.stderr
    assert "compatible" in same.stdout and "every in-flight workflow replays" in same.stdout
    swapped = run_cli(
        tmp_path, url, "check", "--app", "app_v2:dbos", "-s", url, "--finished", "5", "--json"
    )
    assert swapped.returncode == 1, swapped.stderr
    assert "1 in-flight workflow(s) would not replay: waiting" in swapped.stderr
    report = json.loads(swapped.stdout)
    assert report["ok"] is False and report["failing"] == 1
    results = {r["workflow_id"]: r for r in report["results"]}
    waiting = results["waiting"]
    assert waiting["verdict"] == "diverged" and waiting["fails"] is True
    assert waiting["recorded"]["name"] == "a" and waiting["new"]["name"] == "b"
    assert waiting["new"]["function_id"] == 1
    assert waiting["new"]["where"] == swapped_line(tmp_path)
    assert results["done"]["verdict"] == "diverged" and results["done"]["fails"] is False
    bad_app = run_cli(tmp_path, url, "check", "--app", "app_v1", "-s", url)
    assert bad_app.returncode == 2 and "module:attribute" in bad_app.stderr


async def test_an_exported_bundle_imports_byte_for_byte_and_checks_without_a_database(
    system_database_url: str, tmp_path: Path
) -> None:
    url = system_database_url
    write_apps(tmp_path)
    await record(tmp_path, url)
    bundle = tmp_path / "inflight.json"
    exported = run_cli(
        tmp_path, url, "workflow", "export", "done", "waiting", "-s", url, "--output", str(bundle)
    )
    assert exported.returncode == 0, exported.stderr
    missing = run_cli(tmp_path, url, "workflow", "export", "nope", "-s", url)
    assert missing.returncode == 3, missing.stderr

    laptop = sqlite_url(tmp_path / "laptop.sqlite")
    assert run_cli(tmp_path, None, "migrate", "-s", laptop).returncode == 0
    imported = run_cli(tmp_path, None, "workflow", "import", str(bundle), "-s", laptop)
    assert imported.returncode == 0, imported.stderr
    assert "imported 2 workflow(s)" in imported.stdout
    for workflow_id in ("done", "waiting"):
        for action in ("get", "steps"):
            original = run_cli(tmp_path, url, "workflow", action, workflow_id, "-s", url, "--json")
            copy = run_cli(tmp_path, None, "workflow", action, workflow_id, "-s", laptop, "--json")
            assert original.returncode == copy.returncode == 0, copy.stderr
            assert json.loads(copy.stdout) == json.loads(original.stdout)
    payloads = (
        "SELECT function_id, function_name, output, error, serialization "
        "FROM {t}operation_outputs WHERE workflow_uuid = %s ORDER BY function_id"
    )
    for workflow_id in ("done", "waiting"):
        assert await query(laptop, payloads, workflow_id) == await query(url, payloads, workflow_id)
    inputs = "SELECT inputs FROM {t}workflow_input WHERE workflow_uuid = %s"
    assert await query(laptop, inputs, "waiting") == await query(url, inputs, "waiting")
    streams = 'SELECT key, "offset", value FROM {t}streams WHERE workflow_uuid = %s'
    assert await query(laptop, streams, "done") == await query(url, streams, "done") != []

    again = run_cli(tmp_path, None, "workflow", "import", str(bundle), "-s", laptop)
    assert again.returncode == 1 and "already exist" in again.stderr
    assert "done" in again.stderr and "nothing imported" in again.stderr
    over = run_cli(tmp_path, None, "workflow", "import", str(bundle), "-s", laptop, "--overwrite")
    assert over.returncode == 0, over.stderr

    offline = run_cli(tmp_path, None, "check", "--app", "app_v2:dbos", "--bundle", str(bundle))
    assert offline.returncode == 1, offline.stderr
    assert "diverged at function id 1: recorded a, new code calls b" in offline.stdout
    fine = run_cli(tmp_path, None, "check", "--app", "app_v1:dbos", "--bundle", str(bundle))
    assert fine.returncode == 0, fine.stderr
