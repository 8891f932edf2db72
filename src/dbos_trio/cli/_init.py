"""``dbos-trio init``: write a small runnable project from a template shipped in the package.

Invariants, and why:

* Nothing that exists is overwritten. Every path the template would write is checked
  first; if any exists the command fails with exit 2, naming them, before anything is
  written (and each file is then opened with ``"x"``, so a file that appears meanwhile is
  not clobbered either). A scaffold must never cost a user a file.
* Names are checked before anything is written: the application name (``Config.app_name``'s
  rule) and the Python package name, both derived from the directory's name unless
  ``--name`` gives one. A package name that would shadow a module the project imports
  (``trio``, ``tests``, a module of the standard library) is refused: its tests would
  import the wrong thing.
* The templates are package data, ``dbos_trio/cli/_templates/<template>/``, read through
  :mod:`importlib.resources` so they work from a wheel as from a checkout. Their files end
  in ``.tmpl`` so that neither the package's linters nor the import system take them for
  modules of dbos_trio; ``__APP_NAME__`` and ``__PACKAGE__`` in paths and text are
  replaced, and a leading ``gitignore`` becomes ``.gitignore``.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath
from typing import Any

import trio

from dbos_trio._config import APP_NAME_PATTERN
from dbos_trio.cli._errors import UsageError
from dbos_trio.errors import DBOSException

TEMPLATES_PACKAGE = "dbos_trio.cli"
TEMPLATES_DIR = "_templates"
DEFAULT_TEMPLATE = "web-service"
SUFFIX = ".tmpl"
APP_NAME_MARK = "__APP_NAME__"
PACKAGE_MARK = "__PACKAGE__"

# Modules a generated project imports, or that pytest finds by name: a package named so
# would shadow them.
RESERVED_PACKAGES = frozenset(
    {"dbos", "dbos_trio", "trio", "quart", "quart_trio", "hypercorn", "pytest", "tests", "test"}
)


def _root() -> Traversable:
    return resources.files(TEMPLATES_PACKAGE).joinpath(TEMPLATES_DIR)


def template_names() -> list[str]:
    """The templates shipped with the package, sorted (``web-service``, ``worker``)."""
    return sorted(entry.name for entry in _root().iterdir() if entry.is_dir())


def _files(where: Traversable, prefix: PurePosixPath) -> list[tuple[PurePosixPath, str]]:
    found: list[tuple[PurePosixPath, str]] = []
    for entry in sorted(where.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            if entry.name != "__pycache__":
                found.extend(_files(entry, prefix / entry.name))
        elif entry.name.endswith(SUFFIX):
            found.append((prefix / entry.name.removesuffix(SUFFIX), entry.read_text("utf-8")))
    return found


def names_for(directory: Path, name: str | None) -> tuple[str, str]:
    """The application name and the Python package name for a project in ``directory``
    (from ``name`` if given, else from the directory's own name); raises
    :class:`UsageError` saying what to pass instead if either cannot be used."""
    given = name if name is not None else directory.resolve().name
    app_name = re.sub(r"[^a-z0-9_-]+", "-", given.lower()).strip("-")
    where = "--name" if name is not None else f"the directory's name {given!r}"
    if not APP_NAME_PATTERN.fullmatch(app_name):
        raise UsageError(
            f"cannot make an application name from {where}: it must give 3 to 256 "
            "lowercase letters, digits, '_' or '-'; pass --name NAME"
        )
    package = app_name.replace("-", "_")
    if package[0].isdigit():
        package = f"app_{package}"
    if (
        keyword.iskeyword(package)
        or package in RESERVED_PACKAGES
        or package in sys.stdlib_module_names
    ):
        raise UsageError(
            f"the package name {package!r} (from {where}) would shadow the module of that "
            "name that the project imports; pass --name NAME"
        )
    return app_name, package


def render(template: str, app_name: str, package: str) -> dict[PurePosixPath, str]:
    """The files of ``template`` for this project: relative path to text."""
    if template not in template_names():
        raise UsageError(
            f"no template {template!r}: the templates are {', '.join(template_names())}"
        )

    def filled(text: str) -> str:
        return text.replace(APP_NAME_MARK, app_name).replace(PACKAGE_MARK, package)

    rendered: dict[PurePosixPath, str] = {}
    for path, text in _files(_root().joinpath(template), PurePosixPath()):
        parts = [filled(part) for part in path.parts]
        if parts[0] == "gitignore":
            parts[0] = ".gitignore"
        rendered[PurePosixPath(*parts)] = filled(text)
    return rendered


def scaffold(directory: Path, template: str, app_name: str, package: str) -> list[Path]:
    """Write ``template`` into ``directory`` (created if missing); the files written.

    Raises :class:`UsageError` (exit 2), with nothing written, for an unknown template, a
    ``directory`` that is a file, or any file that exists. An error while writing (a full
    disk, a permission) propagates as ``OSError``, the files written so far left in place."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} exists and is not a directory")
    files = {directory / path: text for path, text in render(template, app_name, package).items()}
    existing = [str(path) for path in files if path.exists() or path.is_symlink()]
    if existing:
        raise UsageError(
            f"refusing to overwrite {', '.join(existing)} (nothing was written): "
            "choose a new or empty directory"
        )
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as out:
            out.write(text)
    return list(files)


def add_parsers(commands: Any, **layout: Any) -> None:
    """Add ``init`` to ``commands`` (argparse subparsers). It takes no database options."""
    text = "write a small runnable project: a queue, a workflow, a scheduled job and their "
    text += "tests on virtual time with crash injection, as a Trio web service (web-service: "
    text += "Quart-Trio on Hypercorn) or a worker with no web framework (worker)"
    init = commands.add_parser("init", help=text, description=text + ".", **layout)
    init.add_argument(
        "--template",
        default=DEFAULT_TEMPLATE,
        choices=template_names(),
        help=f"the project to write (default: {DEFAULT_TEMPLATE})",
    )
    init.add_argument(
        "--name",
        default=None,
        help="the application name (default: from DIR's name); the Python package is the "
        "same with '-' as '_'",
    )
    init.add_argument(
        "directory",
        nargs="?",
        default=".",
        metavar="DIR",
        help="where to write it (default: the current directory; created if missing). "
        "Existing files are never overwritten",
    )
    init.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="print tracebacks"
    )
    init.set_defaults(run=_init)


async def _init(args: argparse.Namespace) -> None:
    # Files, not sockets: written in a worker thread, so the Trio run stays responsive.
    await trio.to_thread.run_sync(_write, args)


def _write(args: argparse.Namespace) -> None:
    directory = Path(args.directory)
    app_name, package = names_for(directory, args.name)
    try:
        written = scaffold(directory, args.template, app_name, package)
    except OSError as failed:  # not a database's: exit 1, not "unreachable"
        raise DBOSException(f"cannot write the project into {directory}: {failed}") from None
    print(f"wrote the {args.template} template into {directory}:")
    for path in written:
        print(f"  {path}")
    cd = "" if directory.resolve() == Path.cwd() else f"cd {directory} && "
    program = next(
        (p.stem for p in written if p.parent.name == package and p.stem != "__init__"), None
    )
    print(
        "next:\n"
        f"  {cd}pip install -e '.[test]'   # its dependencies, pytest and pytest-trio\n"
        "  pytest                         # its tests, on virtual time, with crash injection"
        + (f"\n  python -m {package}.{program}    # run it; Ctrl-C stops it" if program else "")
    )
