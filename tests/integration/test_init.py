"""``dbos-trio init``: the project it writes passes its own tests with one command, and
nothing that exists is ever overwritten.

The generated tests run in a subprocess from the new directory, with only its own
pytest settings (its pyproject.toml): nothing of this repository's configuration (its
``-n 4`` workers, its conftest) reaches them, as in a user's checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from dbos_trio.cli._init import names_for, render, template_names

PATIENCE = 300.0  # real seconds: a hang guard for a loaded machine, not a speed bound


def init(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbos_trio.cli", "init", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )


@pytest.mark.parametrize("template", template_names())
def test_the_project_init_writes_passes_its_own_tests(tmp_path: Path, template: str) -> None:
    made = init(tmp_path, "--template", template, "my-shop")
    assert made.returncode == 0, made.stderr
    project = tmp_path / "my-shop"
    assert (project / "pyproject.toml").is_file() and (project / "my_shop/__init__.py").is_file()
    assert "pytest" in made.stdout  # the next steps are printed

    env = {k: v for k, v in os.environ.items() if not k.startswith(("DBOS_", "PYTEST_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout
    assert f"rootdir: {project}" in subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    ).stdout


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    (project / "README.md").write_text("mine")
    refused = init(tmp_path, "shop")
    assert refused.returncode == 2
    assert "refusing to overwrite" in refused.stderr and "README.md" in refused.stderr
    assert (project / "README.md").read_text() == "mine"
    assert sorted(p.name for p in project.iterdir()) == ["README.md"]  # nothing else written


def test_init_refuses_names_it_cannot_use(tmp_path: Path) -> None:
    assert init(tmp_path, "ab").returncode == 2  # an app name needs 3 characters
    shadowing = init(tmp_path, "trio")
    assert shadowing.returncode == 2 and "--name" in shadowing.stderr
    assert init(tmp_path, "--template", "nope", "x-y-z").returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_every_placeholder_is_filled() -> None:
    app_name, package = names_for(Path("/somewhere/2nd Shop"), None)
    assert (app_name, package) == ("2nd-shop", "app_2nd_shop")
    for template in template_names():
        files = render(template, app_name, package)
        assert PurePosixPath(".gitignore") in files
        for path, text in files.items():
            assert "__APP_NAME__" not in str(path) + text
            assert "__PACKAGE__" not in str(path) + text

