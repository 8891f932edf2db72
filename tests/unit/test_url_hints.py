"""The hints a URL that names nothing gets: ``sqlite:///tmp/x`` (three slashes, so the
relative path ``tmp/x``) points to the four-slash absolute form, and a PostgreSQL server
that has no such database points to ``createdb``."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbos_trio._sysdb.postgres.errors import missing_database_hint
from dbos_trio._sysdb.sqlite.connection import path_hint


def test_a_three_slash_url_whose_directory_is_missing_suggests_four_slashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./tmp here, and /tmp exists
    hint = path_hint("tmp/x.sqlite")
    assert "its directory 'tmp' does not exist" in hint
    assert "write four slashes: sqlite:////tmp/x.sqlite" in hint


def test_a_relative_path_in_an_existing_directory_names_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    hint = path_hint("data/app.sqlite")
    assert f"relative to the working directory {str(tmp_path)!r}" in hint
    assert "four slashes" not in hint  # /data does not exist: no absolute reading to offer


def test_absolute_and_memory_paths_need_no_hint() -> None:
    assert path_hint("/tmp/x.sqlite") == "" and path_hint(":memory:") == ""


def test_a_missing_postgres_database_gets_the_createdb_hint() -> None:
    fatal = 'connection failed: ... FATAL:  database "shop_v2" does not exist'
    assert "`createdb shop_v2`" in missing_database_hint(Exception(fatal))
    assert missing_database_hint(Exception("Connection refused")) == ""
