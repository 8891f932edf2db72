"""Fixtures for the interop tests: the official ``dbos`` 3.4 in a virtualenv of its own.

The official package is never imported here. A session fixture makes (once, then reuses)
a separate virtualenv holding ``dbos==3.4.*`` and the tests drive it as a subprocess
(``tests/integration/interop/official/driver.py`` and its ``dbos`` CLI), so its dependencies never
mix with ours.

Where the virtualenv lives: ``$DBOS_TRIO_OFFICIAL_VENV`` if set, else
``$XDG_CACHE_HOME/dbos_trio/official-dbos-3.4-py3.X`` (``~/.cache`` without
``XDG_CACHE_HOME``). It is complete once it holds the marker file ``.dbos-trio-complete``;
an incomplete one (an interrupted install) is removed and made again. Creating it needs
``python -m venv`` and the package index; if either fails the interop tests are skipped
with the reason (they cannot run), never failed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from interop_support import as_url

from dbos_trio._pg.connecting import connect
from dbos_trio._sysdb.postgres import migrate

from support.pg_support import create_database, drop_database, fresh_database, url_for_database

OFFICIAL_REQUIREMENT = "dbos==3.4.*"
OFFICIAL_SERIES = "3.4."
COMPLETE_MARKER = ".dbos-trio-complete"


def official_venv_dir() -> Path:
    configured = os.environ.get("DBOS_TRIO_OFFICIAL_VENV")
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    major, minor = sys.version_info[:2]
    return cache / "dbos_trio" / f"official-dbos-3.4-py{major}.{minor}"


def _installed_version(python: Path) -> str | None:
    try:
        done = subprocess.run(
            [str(python), "-c", "import importlib.metadata as m; print(m.version('dbos'))"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _ready(venv: Path) -> bool:
    python = venv / "bin" / "python"
    if not (venv / COMPLETE_MARKER).exists() or not python.exists():
        return False
    return (_installed_version(python) or "").startswith(OFFICIAL_SERIES)


def _create(venv: Path) -> None:
    if venv.exists():
        shutil.rmtree(venv)
    # In place (not built elsewhere and renamed): console scripts such as bin/dbos carry
    # the virtualenv's absolute path in their first line.
    subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300
    )
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            OFFICIAL_REQUIREMENT,
        ],
        check=True,
        capture_output=True,
        timeout=900,
    )
    version = _installed_version(venv / "bin" / "python")
    if not (version or "").startswith(OFFICIAL_SERIES):
        raise RuntimeError(f"installed dbos {version!r}, wanted {OFFICIAL_REQUIREMENT}")
    (venv / COMPLETE_MARKER).write_text(f"{version}\n")


@pytest.fixture(scope="session")
def official_venv() -> Path:
    """The root of a virtualenv holding the official ``dbos`` 3.4 (made once, then reused)."""
    venv = official_venv_dir()
    if _ready(venv):
        return venv
    try:
        venv.parent.mkdir(parents=True, exist_ok=True)
        with open(venv.parent / f".{venv.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one creator at a time, across processes
            if not _ready(venv):
                _create(venv)
    except (OSError, subprocess.SubprocessError, RuntimeError) as error:
        detail = ""
        if isinstance(error, subprocess.CalledProcessError):
            detail = (error.stderr or b"").decode(errors="replace")[-2000:]
        pytest.skip(
            f"cannot create a virtualenv with {OFFICIAL_REQUIREMENT} at {venv} "
            f"(needs `python -m venv` and the package index): {error} {detail}"
        )
    return venv


@pytest.fixture(scope="session")
def official_python(official_venv: Path) -> Path:
    return official_venv / "bin" / "python"


@pytest.fixture(scope="session")
def official_cli(official_venv: Path) -> Path:
    return official_venv / "bin" / "dbos"


async def _migrate(conninfo: str) -> None:
    conn = await connect(conninfo, autocommit=True)
    try:
        await migrate.migrate(conn, "dbos")
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def interop_template() -> Iterator[str]:
    """A database migrated by dbos_trio, to copy for each test."""
    name = create_database("interoptpl")
    try:
        trio.run(_migrate, url_for_database(name))
        yield name
    finally:
        drop_database(name)


@pytest.fixture
def empty_url() -> Iterator[str]:
    """A new, empty database (nobody has migrated it) as a postgresql:// URL."""
    with fresh_database("interop") as conninfo:
        yield as_url(conninfo)


@pytest.fixture
def url(interop_template: str) -> Iterator[str]:
    """A new database migrated by dbos_trio, as a postgresql:// URL."""
    with fresh_database("interop", template=interop_template) as conninfo:
        yield as_url(conninfo)
