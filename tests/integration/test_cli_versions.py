"""``dbos-trio version list|set-latest``, ``workflow recover --executor`` and ``doctor``,
against both backends: the command's ``main`` in a worker thread (it runs its own Trio
loop), its output and exit code as a user sees them (``tests/integration/test_cli.py``
runs the installed entry point as a process)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable

import attrs
import trio

from dbos_trio import DBOS, Client, EnqueueOptions, SetWorkflowID
from dbos_trio.cli._main import main

from support.backends import execute, status_row
from support.dbos_fixtures import APP_NAME


@attrs.frozen
class Ran:
    returncode: int
    stdout: str
    stderr: str


async def cli(*args: str) -> Ran:
    def run() -> Ran:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return Ran(code, out.getvalue(), err.getvalue())

    return await trio.to_thread.run_sync(run)


async def test_versions_are_listed_and_the_latest_moved_from_the_command_line(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    for version in ("v1", "v2"):
        async with make_dbos(app_version=version).launched():
            pass
    listed = await cli("version", "list", "-s", dbos_url, "-a", APP_NAME, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [v["version_name"] for v in json.loads(listed.stdout)] == ["v2", "v1"]
    moved = await cli("version", "set-latest", "v1", "-s", dbos_url, "-a", APP_NAME)
    assert moved.returncode == 0, moved.stderr
    assert "v1 is now the latest version of wf-tests" in moved.stdout
    table = await cli("version", "list", "-s", dbos_url, "-a", APP_NAME)
    assert table.stdout.splitlines()[2].split()[:2] == ["v1", "*"]
    refused = await cli("version", "set-latest", "v9", "-s", dbos_url, "-a", APP_NAME)
    assert refused.returncode != 0 and "'v9' is not registered" in refused.stderr
    nameless = await cli("version", "set-latest", "v1", "-s", dbos_url)
    assert nameless.returncode != 0 and "--application-name" in nameless.stderr


async def test_workflow_recover_moves_a_silent_executors_rows_and_doctor_lists_them(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    gone = make_dbos(executor_id="gone")
    hold = trio.Event()

    @gone.workflow(name="stuck")
    async def stuck() -> str:
        await hold.wait()
        return "done"

    async with gone.launched():
        with SetWorkflowID("stuck-1"):
            await gone.start_workflow(stuck)
    # The executor is gone with its row PENDING, silent for a minute.
    await execute(dbos_url, "UPDATE {t}workflow_status SET updated_at = updated_at - 60000")
    async with Client(dbos_url, app_name=APP_NAME) as client:
        await client.enqueue(
            EnqueueOptions(workflow_name="stcuk", queue_name="q", app_version="v1")
        )
    doctor = await cli("doctor", "-s", dbos_url, "-a", APP_NAME)
    assert doctor.returncode == 0, doctor.stderr
    assert "silent-executor  gone" in doctor.stdout
    assert "dbos-trio workflow recover --executor gone -a wf-tests" in doctor.stdout
    assert "unknown-name     stcuk" in doctor.stdout

    recovered = await cli(
        "workflow", "recover", "--executor", "gone", "-s", dbos_url, "-a", APP_NAME, "--json"
    )
    assert recovered.returncode == 0, recovered.stderr
    assert json.loads(recovered.stdout) == {"recovered": ["stuck-1"], "left_running": 0}
    row = await status_row(dbos_url, "stuck-1")
    assert (row["status"], row["queue_name"], row["owner_xid"]) == (
        "ENQUEUED",
        "_dbos_internal_queue",
        None,
    )
    again = await cli("workflow", "recover", "--executor", "gone", "-s", dbos_url, "-a", APP_NAME)
    assert "re-enqueued 0 workflow(s) of executor gone" in again.stdout
