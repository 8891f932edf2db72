"""A password in the database URL is never shown: not by repr, an error, a traceback, a log
record or the CLI, whatever the URL's shape and however libpq fails on it.

Each shape is walked end to end against a server that cannot be reached (127.0.0.1 on a
closed port) or a URL libpq cannot parse, then a live executor and a live CLI run with a
password in their URL (the test server trusts local connections, so it is ignored).
"""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
import traceback
from collections.abc import Iterator

import psycopg
import pytest
import trio
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from dbos_trio import DBOS, Client, Config, DBOSInitializationError
from dbos_trio._sysdb.errors import SystemDatabaseUnreachable

from support.pg_support import as_url

SECRET = "S3cret-PW"


def fragments(secret: str) -> list[str]:
    """``secret`` and its pieces of 4 characters or more between URL delimiters (libpq
    quotes a password cut at an '@' or a '/' as a host, port or database name)."""
    return [secret, *(p for p in re.split(r"[@/?#:&=,\s%\[\]]+", secret) if len(p) >= 4)]


def assert_hidden(secret: str, text: str) -> None:
    shown = [fragment for fragment in fragments(secret) if fragment in text]
    assert not shown, f"{shown} shown in:\n{text}"


@pytest.fixture(scope="module")
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens on it any more


# (id, URL with {port} for the closed port, the secret as written in it)
SHAPES = [
    ("plain", "postgresql://alice:S3cret-PW@127.0.0.1:{port}/app", SECRET),
    ("postgres scheme", "postgres://alice:S3cret-PW@127.0.0.1:{port}/app", SECRET),
    ("unencoded @", "postgresql://alice:S3cr@et-PW@127.0.0.1:{port}/app", "S3cr@et-PW"),
    ("unencoded /", "postgresql://alice:S3cr/et-PW@127.0.0.1:{port}/app", "S3cr/et-PW"),
    ("unencoded #", "postgresql://alice:S3cr#et-PW@127.0.0.1:{port}/app", "S3cr#et-PW"),
    ("unencoded ?", "postgresql://alice:S3cr?et-PW@127.0.0.1:{port}/app", "S3cr?et-PW"),
    ("unencoded :", "postgresql://alice:S3cr:et-PW@127.0.0.1:{port}/app", "S3cr:et-PW"),
    ("a space", "postgresql://alice:S3cr et-PW@127.0.0.1:{port}/app", "S3cr et-PW"),
    ("invalid escape", "postgresql://alice:S3cret%ZZPW@127.0.0.1:{port}/app", "S3cret%ZZPW"),
    ("unterminated [", "postgresql://alice:S3cret-PW@[127.0.0.1:{port}/app", SECRET),
    ("query password", "postgresql://alice@127.0.0.1:{port}/app?password=S3cret-PW", SECRET),
    ("query sslpassword", "postgresql://alice@127.0.0.1:{port}/app?sslpassword=S3cret-PW", SECRET),
    ("encoded key", "postgresql://alice@127.0.0.1:{port}/app?pass%77ord=S3cret-PW", SECRET),
    (
        "query invalid escape",
        "postgresql://alice@127.0.0.1:{port}/app?password=S3cret%ZZPW",
        "S3cret%ZZPW",
    ),
    (
        "query & in value",
        "postgresql://alice@127.0.0.1:{port}/app?password=S3cr&et-PW",
        "S3cr&et-PW",
    ),
    (
        "multi-host",
        "postgresql://alice:S3cret-PW@127.0.0.1:{port},localhost:{port}/app",
        SECRET,
    ),
]


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        yield current
        current = current.__cause__ or current.__context__


def shown_by(error: BaseException) -> str:
    """Everything an error may show: str and repr of it and of every link of its chain
    (hidden links included), and its full formatted traceback."""
    texts = [f"{link}\n{link!r}" for link in _chain(error)]
    return "\n".join([*texts, "".join(traceback.format_exception(error))])


@pytest.mark.parametrize(
    ("url_template", "secret"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES]
)
async def test_no_view_of_a_failed_launch_or_client_shows_the_password(
    url_template: str, secret: str, closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    url = url_template.format(port=closed_port)
    caplog.set_level(logging.DEBUG, logger="dbos_trio")
    config = Config(app_name="secrets", database_url=url, connect_timeout=2.0)
    dbos = DBOS(config)
    client = Client(url, connect_timeout=2.0, database_retry_limit=1.0)
    seen = [repr(config), str(config), repr(dbos), repr(client)]

    with pytest.raises(DBOSInitializationError) as launch:
        async with dbos.launched():
            pass
    with pytest.raises(SystemDatabaseUnreachable) as opening:
        async with client:
            pass
    seen += [shown_by(launch.value), shown_by(opening.value)]
    seen += [caplog.text, *(r.getMessage() for r in caplog.records)]

    for text in seen:
        assert_hidden(secret, text)
    # The messages still say what went wrong.
    assert "cannot connect to the system database" in str(launch.value)
    assert "never creates or migrates" in str(opening.value)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("url_template", "secret"), [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES]
)
def test_the_cli_never_prints_the_password(
    url_template: str, secret: str, closed_port: int
) -> None:
    url = url_template.format(port=closed_port)

    plain = run_cli("workflow", "list", "--database-url", url)
    debug = run_cli("workflow", "list", "--database-url", url, "--debug")

    for result in (plain, debug):
        assert result.returncode == 4, result.stderr
        assert_hidden(secret, result.stdout + result.stderr)
    assert len(plain.stderr.splitlines()) == 1
    assert plain.stderr.startswith("dbos-trio: error: database unreachable: ")
    assert "Traceback" in debug.stderr


def _with_password(url: str) -> str:
    params = conninfo_to_dict(url)
    params["password"] = SECRET
    base = as_url(make_conninfo("", **params))
    return base + ("&" if "?" in base else "?") + "sslpassword=" + SECRET


def _terminate_other_sessions(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


async def test_a_live_executor_with_a_password_in_its_url_never_logs_it(
    empty_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = _with_password(empty_database_url)
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.OperationalError:
        pytest.skip("the test server checks passwords; this test needs trust authentication")
    caplog.set_level(logging.DEBUG, logger="dbos_trio")
    dbos = DBOS(Config(app_name="secrets", database_url=url))

    @dbos.workflow()
    async def echo(x: int) -> int:
        return x

    async with dbos.launched():
        assert await echo(1) == 1
        # Every connection of the executor dies: it reconnects (and logs about it).
        await trio.to_thread.run_sync(_terminate_other_sessions, empty_database_url)
        assert await echo(2) == 2
    assert caplog.records, "the executor logged nothing at DEBUG"

    assert_hidden(SECRET, caplog.text + repr(dbos))
