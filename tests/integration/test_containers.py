"""The pytest plugin's PostgreSQL: the one variable ($DBOS_TRIO_TEST_POSTGRES_URL, as this
project's tests read; $DBOS_TEST_DATABASE_URL is its older name), else a testcontainers
PostgreSQL where Docker answers, else a skip whose reason says what is missing.
Run through a real pytest subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from dbos_trio.testing._containers import docker_unavailable, postgres_container

from support.pg_support import admin_url

PLUGIN_TEST = """
    from dbos_trio import DBOS, Config
    from dbos_trio.testing import launched


    async def test_a_workflow_on_postgres(dbos_postgres_url):
        dbos = DBOS(Config(app_name="containers", database_url=dbos_postgres_url))

        @dbos.workflow()
        async def hello() -> str:
            return "hello"

        async with launched(dbos):
            assert await hello() == "hello"
"""


def run_plugin_test(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["dbos_trio.testing.pytest_plugin"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n")
    (tmp_path / "test_app.py").write_text(textwrap.dedent(PLUGIN_TEST))
    unset = ("DBOS_TRIO_TEST_POSTGRES_URL", "DBOS_TEST_DATABASE_URL")
    base = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, "PYTHONDONTWRITEBYTECODE": "1", **env},
    )


def test_the_plugin_creates_its_databases_on_the_server_the_variable_names(
    tmp_path: Path,
) -> None:
    done = run_plugin_test(tmp_path, DBOS_TRIO_TEST_POSTGRES_URL=admin_url())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_without_a_url_the_plugin_starts_a_container_or_says_why_it_cannot(
    tmp_path: Path,
) -> None:
    done = run_plugin_test(tmp_path)
    unavailable = docker_unavailable()
    if unavailable is None:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 passed" in done.stdout
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 skipped" in done.stdout
        assert "set DBOS_TRIO_TEST_POSTGRES_URL; no container either" in done.stdout
        # The reason names the missing piece: the extra, or the Docker daemon.
        assert ("testcontainers is not installed" in done.stdout) or (
            "no Docker daemon answers" in done.stdout
        ), done.stdout


def test_a_container_accepts_connections_where_docker_answers() -> None:
    unavailable = docker_unavailable()
    if unavailable is not None:
        pytest.skip(unavailable)
    with postgres_container() as url, psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
