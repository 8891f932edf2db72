"""The dbos-trio command line, run as a real subprocess against a real database."""

from __future__ import annotations

import base64
import json
import os
import pickle
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from dbos_trio import DBOS, Config
from dbos_trio.cli._errors import CLI_RETRY_LIMIT_SECONDS

from support.backends import execute, query
from support.pg_support import fresh_database


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


class Planted:
    """Unpickling this creates a file: proof that a payload ran code."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


async def test_a_planted_pickle_runs_nothing_in_the_cli_without_allow_pickle(
    system_database_url: str, tmp_path: Path
) -> None:
    migrated_url = system_database_url
    marker = tmp_path / "ran"
    payload = base64.b64encode(pickle.dumps(Planted(str(marker)))).decode()
    await execute(
        migrated_url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, output, serialization, "
        "created_at, updated_at) VALUES ('planted', 'SUCCESS', 'x', %s, 'py_pickle', 1, 1)",
        payload,
    )
    shown = run_cli("workflow", "get", "planted", "-s", migrated_url, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["output"] == payload  # shown as stored
    assert run_cli("workflow", "list", "-s", migrated_url, "--json").returncode == 0
    assert not marker.exists()
    run_cli("workflow", "get", "planted", "-s", migrated_url, "--json", "--allow-pickle")
    assert marker.exists()  # the flag does what it says


def test_migrate_creates_a_schema_the_library_then_accepts(empty_database_url: str) -> None:
    migrated = run_cli("migrate", "--database-url", empty_database_url)
    assert migrated.returncode == 0, migrated.stderr
    listing = run_cli("workflow", "list", "--database-url", empty_database_url, "--json")
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout) == []


def test_a_command_on_an_unmigrated_database_fails_with_a_clear_message(
    empty_database_url: str,
) -> None:
    result = run_cli("workflow", "list", "--database-url", empty_database_url)
    assert result.returncode == 1
    assert "dbos-trio:" in result.stderr
    assert "never creates or migrates" in result.stderr


async def test_list_get_steps_fork_cancel_and_delete_show_and_change_stored_workflows(
    empty_database_url: str,
) -> None:
    dbos = DBOS(Config(app_name="cli-test", database_url=empty_database_url))

    @dbos.step()
    async def double(x: int) -> int:
        return 2 * x

    @dbos.workflow()
    async def twice(x: int) -> int:
        return await double(await double(x))

    async with dbos.launched():
        handle = await dbos.start_workflow(twice, 3)
        assert await handle.get_result() == 12
    workflow_id = handle.workflow_id
    url = empty_database_url

    listed = json.loads(run_cli("workflow", "list", "-s", url, "--json").stdout)
    assert [(w["workflow_id"], w["name"], w["status"]) for w in listed] == [
        (
            workflow_id,
            "test_list_get_steps_fork_cancel_and_delete_show_and_change_stored_workflows.<locals>.twice",
            "SUCCESS",
        )
    ]
    table = run_cli("workflow", "list", "-s", url).stdout
    assert workflow_id in table and "SUCCESS" in table

    # Pickled payloads are shown as stored unless --allow-pickle: decoding one runs code.
    got = json.loads(run_cli("workflow", "get", workflow_id, "-s", url, "--json").stdout)
    assert pickle.loads(base64.b64decode(got["output"])) == 12
    trusted = ("-s", url, "--json", "--allow-pickle")
    got = json.loads(run_cli("workflow", "get", workflow_id, *trusted).stdout)
    assert got["output"] == 12

    steps = json.loads(run_cli("workflow", "steps", workflow_id, *trusted).stdout)
    assert [(s["function_id"], s["output"]) for s in steps] == [(1, 6), (2, 12)]

    forked = run_cli("workflow", "fork", workflow_id, "--step", "2", "-s", url, "--json")
    assert forked.returncode == 0, forked.stderr
    forked_id = json.loads(forked.stdout)["workflow_id"]
    forked_status = json.loads(run_cli("workflow", "get", forked_id, "-s", url, "--json").stdout)
    assert forked_status["status"] == "ENQUEUED"
    assert forked_status["forked_from"] == workflow_id
    forked_steps = json.loads(run_cli("workflow", "steps", forked_id, "-s", url, "--json").stdout)
    assert [s["function_id"] for s in forked_steps] == [1]

    assert run_cli("workflow", "cancel", forked_id, "-s", url).returncode == 0
    cancelled = json.loads(run_cli("workflow", "get", forked_id, "-s", url, "--json").stdout)
    assert cancelled["status"] == "CANCELLED"

    assert run_cli("workflow", "delete", forked_id, "-s", url).returncode == 0
    missing = run_cli("workflow", "get", forked_id, "-s", url)
    assert missing.returncode == 3  # not found


def test_migrate_and_list_work_on_a_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    assert run_cli("workflow", "list", "--database-url", url).returncode == 4  # not there yet
    migrated = run_cli("migrate", "--database-url", url)
    assert migrated.returncode == 0, migrated.stderr
    listing = run_cli("workflow", "list", "--database-url", url, "--json")
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout) == []


# --- errors: one line on stderr, and an exit code by kind --------------------------------

USAGE, NOT_FOUND, UNREACHABLE = 2, 3, 4


@pytest.fixture(scope="module")
def migrated_url(postgres_template: str) -> Iterator[str]:
    """A migrated, empty system database shared by the error tests of this module."""
    with fresh_database("cli", template=postgres_template) as url:
        yield url


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert result.returncode == code, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("dbos-trio: error: "), lines[0]
    assert text in lines[0], lines[0]
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("action", ["get", "steps", "cancel", "resume", "delete", "fork"])
def test_a_missing_workflow_id_is_not_found_for_every_command_that_names_one(
    migrated_url: str, action: str
) -> None:
    result = run_cli("workflow", action, "nope", "-s", migrated_url)

    assert_one_line_error(result, NOT_FOUND, "workflow 'nope' not found")


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["workflow", "list", "--limit", "-1"], "argument --limit/-l: '-1' must be 0 or more"),
        (["workflow", "list", "--limit", "ten"], "'ten' is not a whole number"),
        (["workflow", "list", "--offset", "-5"], "argument --offset/-o: '-5' must be 0 or more"),
        (["workflow", "list", "--start-time", "yesterday"], "'yesterday' is not an ISO 8601 time"),
        (["workflow", "list", "--end-time", "2026-13-40"], "is not an ISO 8601 time"),
        (["workflow", "list", "--status", "BOGUS"], "'BOGUS' is not a workflow status (one of"),
        (["queue", "list", "--status", "BOGUS"], "'BOGUS' is not a workflow status"),
        (["workflow", "fork", "nope", "--step", "0"], "'0' must be 1 or more"),
        (["workflow", "list", "--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["workflow", "frobnicate"], "invalid choice: 'frobnicate'"),
        (["workflow", "get"], "the following arguments are required: workflow_id"),
    ],
)
def test_bad_usage_is_one_line_and_exit_code_2_before_anything_connects(
    args: list[str], text: str, closed_port: int
) -> None:
    # The URL names nothing that answers: the check comes first, or this would be exit 4.
    result = run_cli(*args, "-s", f"postgresql://u@127.0.0.1:{closed_port}/x")

    assert_one_line_error(result, USAGE, text)


def test_a_valid_status_in_any_case_lists_only_workflows_in_it(migrated_url: str) -> None:
    listed = run_cli("workflow", "list", "--status", "success", "-s", migrated_url, "--json")

    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_no_database_configured_is_a_usage_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", "workflow", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if "DATABASE_URL" not in k},
    )

    assert_one_line_error(result, USAGE, "no database: pass --database-url")


@pytest.fixture(scope="module")
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens on it any more


def test_a_database_that_refuses_connections_is_unreachable(closed_port: int) -> None:
    result = run_cli("workflow", "list", "-s", f"postgresql://u@127.0.0.1:{closed_port}/x")

    assert_one_line_error(result, UNREACHABLE, "database unreachable: ")
    assert "Connection refused" in result.stderr


def test_a_missing_database_is_one_kind_on_both_backends_and_says_how_to_create_it(
    tmp_path: Path,
) -> None:
    name = f"missing_{uuid.uuid4().hex[:12]}"
    pg = run_cli("workflow", "list", "-s", f"postgresql://postgres:pw@127.0.0.1:5432/{name}")
    assert_one_line_error(pg, UNREACHABLE, "database unreachable: ")
    assert f"`createdb {name}`" in pg.stderr and ":pw@" not in pg.stderr
    sqlite = run_cli("workflow", "list", "-s", f"sqlite:///{tmp_path / 'none.sqlite'}")
    assert_one_line_error(sqlite, UNREACHABLE, "database unreachable: ")
    assert "does not exist" in sqlite.stderr and "dbos-trio migrate" in sqlite.stderr


def test_debug_prints_the_traceback_before_the_one_line(closed_port: int) -> None:
    url = f"postgresql://u@127.0.0.1:{closed_port}/x"
    after = run_cli("workflow", "list", "-s", url, "--debug")
    before = run_cli("--debug", "workflow", "list", "-s", url)

    for result in (after, before):
        assert result.returncode == UNREACHABLE
        assert result.stderr.startswith("Traceback (most recent call last):")
        assert result.stderr.splitlines()[-1].startswith("dbos-trio: error: database unreachable")


def test_a_database_that_keeps_dropping_the_connection_is_unreachable_after_the_retry_bound(
    migrated_url: str,
) -> None:
    # A workflow_status that ends the session of whoever reads a row of it: every attempt
    # connects, then loses its connection, until the client gives up.
    with fresh_database("cli_drop", template=_template_of(migrated_url)) as url:
        _run_sql(
            url,
            "INSERT INTO dbos.workflow_status (workflow_uuid, status, name)"
            " VALUES ('w1', 'SUCCESS', 'f')",
            "ALTER TABLE dbos.workflow_status RENAME TO workflow_status_rows",
            "CREATE FUNCTION dbos.drop_session() RETURNS boolean LANGUAGE sql"
            " AS 'SELECT pg_terminate_backend(pg_backend_pid())'",
            "CREATE VIEW dbos.workflow_status AS"
            " SELECT * FROM dbos.workflow_status_rows WHERE dbos.drop_session()",
        )
        result = run_cli("workflow", "list", "-s", url)

    assert_one_line_error(
        result,
        UNREACHABLE,
        f"database unreachable (gave up after retrying for {CLI_RETRY_LIMIT_SECONDS:g} s)",
    )


def test_the_help_documents_the_exit_codes() -> None:
    for args in (["--help"], ["workflow", "list", "--help"]):
        shown = run_cli(*args)
        assert shown.returncode == 0
        assert "exit codes:" in shown.stdout
        for line in ("2    bad usage", "3    not found", "4    database unreachable"):
            assert line in shown.stdout


def _template_of(url: str) -> str:
    return url.rsplit("/", 1)[1].split("?", 1)[0]


def _run_sql(url: str, *statements: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


async def test_gc_deletes_old_finished_workflows_and_reports_progress_and_a_summary(
    system_database_url: str,
) -> None:
    url = system_database_url
    for workflow_id, status, created in (
        ("old-done", "SUCCESS", 1_000),
        ("old-failed", "ERROR", 2_000),
        ("old-pending", "PENDING", 3_000),
        ("new-done", "SUCCESS", 4_000_000_000_000),
    ):
        await execute(
            url,
            "INSERT INTO {t}workflow_status (workflow_uuid, status, name, created_at, "
            "updated_at, completed_at) VALUES (%s, %s, 'x', %s, %s, %s)",
            workflow_id,
            status,
            created,
            created,
            created,
        )
    assert run_cli("gc", "-s", url).returncode == 2  # no bound: a usage error
    assert run_cli("gc", "-s", url, "--keep-newest", "-1").returncode == 2
    done = run_cli("gc", "-s", url, "--older-than", "86400", "--batch-size", "1", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["deleted"], summary["batches"]) == (2, 3)
    left = {row[0] for row in await query(url, "SELECT workflow_uuid FROM {t}workflow_status")}
    assert left == {"old-pending", "new-done"}
    cancelled = run_cli("cancel-before", "2000-01-01T00:00:00Z", "-s", url)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == "cancelled 1 workflows"
    assert await query(
        url, "SELECT status FROM {t}workflow_status WHERE workflow_uuid = 'old-pending'"
    ) == [("CANCELLED",)]
