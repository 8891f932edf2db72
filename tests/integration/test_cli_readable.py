"""The dbos-trio command line reads well: help for everything, --version, a detailed
``workflow get``, human times (raw epochs only in --json), natural JSON shapes, bulk
actions with progress. Run as a real subprocess against a real SQLite file (the
PostgreSQL paths are the same code, covered by test_cli.py).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from dbos_trio import DBOS, Client, Config, EnqueueOptions, SetWorkflowID
from dbos_trio.cli._format import duration, when
from dbos_trio.cli._main import _parser, main
from dbos_trio.testing import sqlite_url

RAW_EPOCH_MS = re.compile(r"\b1\d{12}\b")  # epoch milliseconds, as stored
RAW_EPOCH_S = re.compile(r"\b1\d{9}\.\d+")  # a sleep's wake-up time, as stored
RunCLI = Callable[..., "Ran"]


@attrs.frozen
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> RunCLI:
    """``dbos_trio.cli._main.main`` in this process (a subprocess per call would cost a second
    of imports each; test_cli.py and one test here run the real executable)."""

    def run(*args: str, stdin: str | None = None) -> Ran:
        capsys.readouterr()
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin or ""))
        code = main(list(args))
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@pytest.fixture
def ok(run_cli: RunCLI) -> RunCLI:
    def run(*args: str, stdin: str | None = None) -> Ran:
        result = run_cli(*args, stdin=stdin)
        assert result.returncode == 0, result.stderr
        return result

    return run


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A SQLite file holding: wf-ok (a step, a durable sleep, SUCCESS), wf-bad (ERROR),
    and three unfinished ones (ENQUEUED on a queue nobody serves)."""
    database = sqlite_url(tmp_path / "cli.sqlite")
    trio.run(_populate, database)
    return database


async def _populate(database: str) -> None:
    dbos = DBOS(Config(app_name="readable", database_url=database))

    @dbos.step(name="double")
    async def double(x: int) -> int:
        return 2 * x

    @dbos.workflow()
    async def flow(x: int, label: str = "a") -> int:
        doubled = await double(x)
        await dbos.sleep(0.05)
        return doubled

    @dbos.workflow()
    async def broken() -> None:
        raise ValueError("the input was wrong")

    async with dbos.launched():
        with SetWorkflowID("wf-ok"):
            assert await flow(3, label="b") == 6
        with SetWorkflowID("wf-bad"), pytest.raises(ValueError):
            await broken()
    # Enqueued after the executor stopped: nothing runs them.
    async with Client(database) as client:
        for n in range(3):
            options = EnqueueOptions(
                workflow_name="idle", queue_name="nobody-serves", workflow_id=f"q-{n}"
            )
            await client.enqueue(options, n)


def test_every_command_and_option_has_help_and_no_markup() -> None:
    parsers = [_parser()]
    seen = 0
    while parsers:
        parser = parsers.pop()
        text = parser.format_help()
        for markup in ("``", ":class:", ":mod:", ":func:", "\n.. "):
            assert markup not in text, f"{parser.prog}: {markup!r} in its help"
        assert parser.description, f"{parser.prog} has no description"
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, f"{parser.prog} {choice.dest} has no help"
                parsers.extend(action.choices.values())
            elif not isinstance(action, argparse._HelpAction):
                assert action.help, f"{parser.prog}: {action.option_strings or action.dest}"
        seen += 1
    assert seen >= 20  # dbos-trio, migrate, workflow (7), queue (1), schedule (7), ...


def test_version_prints_the_installed_version_from_the_real_executable(url: str) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", "--version"], capture_output=True, text=True
    )
    assert shown.stdout.strip() == f"dbos-trio {metadata.version('dbos-trio')}"
    got = subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", "workflow", "get", "wf-ok", "-s", url],
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0, got.stderr
    assert "steps (2):" in got.stdout


def test_the_helpers_show_times_and_durations_for_people() -> None:
    assert when(0) == "1970-01-01 00:00:00 UTC"
    assert when(None) == ""
    assert [duration(ms) for ms in (0, 350, 4200, 60_000, 200_000, 7_500_000, 3 * 86_400_000)] == [
        "0 ms",
        "350 ms",
        "4.2 s",
        "1 min",
        "3 min 20 s",
        "2 h 5 min",
        "3 d",
    ]
    assert duration(90_061_000) == "1 d 1 h"
    assert duration(-1) == duration(None) == ""


def test_workflow_get_shows_status_timings_payloads_and_steps(
    url: str, ok: RunCLI, run_cli: RunCLI
) -> None:
    shown = ok("workflow", "get", "wf-ok", "-s", url, "--allow-pickle").stdout
    assert re.search(r"^status\s+SUCCESS$", shown, re.M), shown
    assert re.search(r"^input\s+\(3, label='b'\)$", shown, re.M), shown
    assert re.search(r"^output\s+6$", shown, re.M), shown
    assert re.search(r"^created\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", shown, re.M), shown
    assert re.search(r"^took\s+\d+ ms$", shown, re.M), shown
    assert "steps (2):" in shown
    assert re.search(r"^1\s+.*double\s.*\s6$", shown, re.M), shown
    assert re.search(r"^2\s+DBOS\.sleep\s.*wakes \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", shown, re.M)
    assert not RAW_EPOCH_MS.search(shown) and not RAW_EPOCH_S.search(shown), shown

    failed = ok("workflow", "get", "wf-bad", "-s", url, "--allow-pickle").stdout
    assert re.search(r"^status\s+ERROR$", failed, re.M), failed
    assert re.search(r"^error\s+ValueError: the input was wrong$", failed, re.M), failed

    # Without --allow-pickle the pickled payloads are shown as stored, and say so.
    guarded = ok("workflow", "get", "wf-ok", "-s", url).stdout
    assert "shown as stored: --allow-pickle decodes it" in guarded
    assert "(as stored)" in ok("workflow", "steps", "wf-ok", "-s", url).stdout


def test_json_keeps_raw_epochs_and_has_the_natural_shape(
    url: str, ok: RunCLI, run_cli: RunCLI
) -> None:
    got: dict[str, Any] = json.loads(
        ok("workflow", "get", "wf-ok", "-s", url, "--json", "--allow-pickle").stdout
    )
    assert got["workflow_id"] == "wf-ok" and got["output"] == 6
    assert isinstance(got["created_at"], int) and got["completed_at"] >= got["created_at"]
    assert [(s["function_id"], s["function_name"]) for s in got["steps"]] == [
        (1, "double"),
        (2, "DBOS.sleep"),
    ]
    assert isinstance(got["steps"][1]["output"], float)  # the wake-up time, as stored
    listed = json.loads(ok("workflow", "list", "-s", url, "--json").stdout)
    assert isinstance(listed, list) and len(listed) == 5
    table = ok("workflow", "list", "-s", url).stdout
    assert not RAW_EPOCH_MS.search(table), table


def test_cancel_resume_delete_print_json_objects_for_one_and_lists_for_many(
    url: str, ok: RunCLI, run_cli: RunCLI
) -> None:
    one = json.loads(ok("workflow", "cancel", "q-0", "-s", url, "--json").stdout)
    assert one == {"workflow_id": "q-0", "cancelled": True}
    many = json.loads(ok("workflow", "cancel", "q-1", "q-2", "-s", url, "--json").stdout)
    assert many == [
        {"workflow_id": "q-1", "cancelled": True},
        {"workflow_id": "q-2", "cancelled": True},
    ]
    statuses = json.loads(ok("workflow", "list", "-s", url, "--json", "-S", "cancelled").stdout)
    assert sorted(w["workflow_id"] for w in statuses) == ["q-0", "q-1", "q-2"]

    resumed = json.loads(ok("workflow", "resume", "q-0", "-s", url, "--json").stdout)
    assert resumed == {"workflow_id": "q-0", "resumed": True}
    assert json.loads(ok("workflow", "get", "q-0", "-s", url, "--json").stdout)["status"] == (
        "ENQUEUED"
    )
    deleted = json.loads(ok("workflow", "delete", "q-0", "-s", url, "--json").stdout)
    assert deleted == {"workflow_id": "q-0", "deleted": True}
    assert run_cli("workflow", "get", "q-0", "-s", url).returncode == 3


def test_bulk_ids_from_stdin_with_progress_and_nothing_done_if_one_is_missing(
    url: str, ok: RunCLI, run_cli: RunCLI
) -> None:
    missing = run_cli("workflow", "cancel", "q-1", "no-such-id", "q-2", "-s", url)
    assert missing.returncode == 3
    assert "no-such-id" in missing.stderr
    pending = json.loads(ok("workflow", "list", "-s", url, "--json", "-S", "ENQUEUED").stdout)
    assert len(pending) == 3  # nothing was cancelled: every id is checked first

    listed = ok("queue", "list", "-s", url, "--json").stdout
    ids = "\n".join(w["workflow_id"] for w in json.loads(listed)) + "\n\n"
    done = ok("workflow", "cancel", "-", "-s", url, "--json", "--progress", stdin=ids)
    assert json.loads(done.stdout) == [
        {"workflow_id": f"q-{n}", "cancelled": True} for n in range(3)
    ]
    assert done.stderr.splitlines() == ["cancelled 1/3", "cancelled 2/3", "cancelled 3/3"]

    human = ok("workflow", "delete", "q-1", "q-2", "-s", url)
    assert human.stdout.splitlines() == ["deleted q-1", "deleted q-2"]
    assert human.stderr == ""  # not a terminal, no --progress: each id's line is enough


def test_migrate_prints_json_too(tmp_path: Path, ok: RunCLI) -> None:
    url = sqlite_url(tmp_path / "fresh.sqlite")
    assert json.loads(ok("migrate", "-s", url, "--json").stdout) == {
        "migrated": url,
        "schema": None,
    }
    assert ok("migrate", "-s", url).stdout.strip() == f"migrated {url}"


def test_a_row_with_an_impossible_time_is_listed_as_invalid_not_a_usage_error(
    url: str, ok: RunCLI
) -> None:
    # Written by hand (or a broken writer): created_at = 2**62 ms is no date. The commands
    # exited 2, "year out of range", as if the user had typed a bad option.
    conn = sqlite3.connect(url[len("sqlite:///") :])
    with conn:
        conn.execute(
            "INSERT INTO workflow_status (workflow_uuid, status, name, created_at, updated_at) "
            "VALUES ('from-the-future', 'SUCCESS', 'double', ?, ?)",
            (2**62, 2**62),
        )
    conn.close()
    listed = ok("workflow", "list", "-s", url)
    assert "from-the-future" in listed.stdout
    assert "invalid time (4611686018427387904 ms)" in listed.stdout
    shown = ok("workflow", "get", "from-the-future", "-s", url)
    assert "invalid time" in shown.stdout
