"""The upgrade that used to hang silently: crash, edit one comment, re-run.

A real application file (written to a temporary directory) runs with the default,
source-hashed application version; its workflow is SIGKILLed mid-way. Then a comment in
the workflow is edited — which changes the version — and the application runs again under
the same executor id, starting the same workflow id and waiting on it. The old row stays
PENDING under the old version (correct: its checkpoints must not replay into other code),
but now never silently: the launch logs a WARNING naming the old version, the count and
the fixes, the wait logs one naming the workflow, its version and the fork command, and
``dbos-trio doctor`` lists the stranded version.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import trio

from support.backends import status_row
from support.queue_fixtures import SRC, TESTS

APP = """
import sys
import logging

import trio

from dbos_trio import DBOS, Config, SetWorkflowID

logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(levelname)s %(message)s")
url, mode = sys.argv[1], sys.argv[2]
dbos = DBOS(Config(app_name="edited-app", database_url=url))


@dbos.step()
async def first() -> int:
    return 1


@dbos.workflow()
async def job() -> int:
    # EDIT-ME
    n = await first()
    if mode == "crash":
        await trio.sleep_forever()
    return n + 1


async def main() -> None:
    async with dbos.launched():
        print("VERSION", dbos.app_version, flush=True)
        with SetWorkflowID("edited-1"):
            if mode == "crash":
                await dbos.start_workflow(job)
                while (await dbos.list_workflow_steps("edited-1")) == []:
                    await trio.sleep(0.05)
                print("STARTED", flush=True)
                await trio.sleep_forever()
            handle = await dbos.start_workflow(job)
        with trio.move_on_after(1.5):
            await handle.get_result()
        print("GAVE UP WAITING", flush=True)


trio.run(main)
"""


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(TESTS)])
    env["PYTHONUNBUFFERED"] = "1"
    for variable in ("DBOS__APPVERSION", "DBOS__VMID"):
        env.pop(variable, None)
    return env


async def _crash_run(app: Path, url: str) -> str:
    process = subprocess.Popen(  # noqa: ASYNC220 - a process to SIGKILL, read in a thread
        [sys.executable, str(app), url, "crash"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_environment(),
    )
    assert process.stdout is not None
    lines: list[str] = []

    def read_until_started() -> None:
        assert process.stdout is not None
        for raw in iter(process.stdout.readline, b""):
            lines.append(raw.decode())
            if raw.startswith(b"STARTED"):
                return

    try:
        with trio.fail_after(60):
            await trio.to_thread.run_sync(read_until_started, abandon_on_cancel=True)
        assert any(line.startswith("STARTED") for line in lines), "".join(lines)
    finally:
        process.kill()
        await trio.to_thread.run_sync(process.wait)
    (version,) = [line.split()[1] for line in lines if line.startswith("VERSION")]
    return version


async def test_an_edit_between_a_crash_and_the_rerun_ends_in_warnings_and_doctor_lists_it(
    dbos_url: str, tmp_path: Path
) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    old_version = await _crash_run(app, dbos_url)
    assert (await status_row(dbos_url, "edited-1"))["status"] == "PENDING"

    app.write_text(APP.replace("# EDIT-ME", "# edited: a comment changes the version"))
    with trio.fail_after(60):
        rerun = await trio.run_process(
            [sys.executable, str(app), dbos_url, "rerun"],
            capture_stdout=True,
            capture_stderr=True,
            env=_environment(),
            check=False,
        )
    out = rerun.stdout.decode()
    assert rerun.returncode == 0, out + rerun.stderr.decode()
    (new_version,) = [line.split()[1] for line in out.splitlines() if line.startswith("VERSION")]
    assert new_version != old_version
    launch = [line for line in out.splitlines() if "wait under application version" in line]
    assert len(launch) == 1 and old_version in launch[0] and "1 PENDING" in launch[0]
    assert "DBOS__APPVERSION" in launch[0]
    waiting = [line for line in out.splitlines() if "waiting on workflow edited-1" in line]
    assert len(waiting) == 1, out
    assert old_version in waiting[0]
    assert f"fork edited-1 --application-version {new_version}" in waiting[0]
    assert "GAVE UP WAITING" in out
    row = await status_row(dbos_url, "edited-1")
    assert (row["status"], row["application_version"]) == ("PENDING", old_version)

    with trio.fail_after(60):
        command = [sys.executable, "-m", "dbos_trio.cli", "doctor", "-a", "edited-app"]
        command += ["--database-url", dbos_url, "--heartbeat-interval", "0.1", "--json"]
        doctor = await trio.run_process(
            command,
            capture_stdout=True,
            capture_stderr=True,
            env=_environment(),
            check=False,
        )
    assert doctor.returncode == 0, doctor.stderr.decode()
    report = json.loads(doctor.stdout.decode())
    assert report["latest_version"] == new_version
    by_kind = {(f["kind"], f["subject"]): f for f in report["findings"]}
    stranded = by_kind[("unrun-version", old_version)]
    assert stranded["count"] == 1 and "1 PENDING" in stranded["detail"]
    assert f"app_version={old_version}" in stranded["fix"]
