"""The PostgreSQL system-schema migration corpus: loading, checking and rendering it.

Invariant: version N of this corpus produces, step for step, the same schema as version N of
every official DBOS SDK (the official Python package 3.4 is the reference), because all of
them migrate and then share one system database. A migration, once released, never changes;
the schema moves only by appending migrations. Versions 1-47 are the history the Python, Go,
Java and Rust SDKs agree on, 48-99 are empty padding (numbers that still count: the version
jumps over them without a round trip), and from 100 on every SDK defines the same migration at
the same number. ``tests/sysdb/test_migrations.py`` holds the corpus to the official catalog.

The corpus is plain SQL, one file per version, ``NNNN_short_name.sql`` (packaged into the
wheel as ``dbos_trio/_migrations``; a source checkout reads the repository's ``migrations/``).
File conventions, all enforced when the corpus is loaded:

* ``{{schema}}`` stands for the system schema and is rendered as a quoted identifier, so any
  schema name works, including ones that need quoting.
* A first line ``-- online`` marks a migration that must run outside a transaction block: a
  single ``CREATE/DROP INDEX CONCURRENTLY`` statement, so live executors are not blocked.
* Lines between ``-- begin listen_notify`` and ``-- end listen_notify`` exist only for
  databases that use LISTEN/NOTIFY (the NOTIFY triggers); with ``use_listen_notify=False`` they
  are dropped, and a migration left without SQL still consumes its version number.

This module does no I/O beyond reading those files; the runner is
:mod:`dbos_trio._sysdb.postgres.migrate`.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import attrs

LATEST_VERSION = 125
"""The highest migration this build knows; a database recorded at it is fully migrated."""

SHARED_MIGRATION_BASE = 100
"""From this version on, every DBOS SDK defines the same migration at the same number."""

OWN_HISTORY_END = 47
"""The last version of the pre-shared history; SHARED_MIGRATION_BASE - 1 is the last padding."""

SCHEMA_PLACEHOLDER = "{{schema}}"
ONLINE_MARKER = "-- online"
BEGIN_LISTEN_NOTIFY = "-- begin listen_notify"
END_LISTEN_NOTIFY = "-- end listen_notify"

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")
_MAX_IDENTIFIER_BYTES = 63  # PostgreSQL's NAMEDATALEN - 1; longer names are silently cut


class MigrationCorpusError(Exception):
    """The migration files on disk break the corpus conventions (a packaging or editing bug)."""


@attrs.frozen
class Migration:
    """One migration rendered for a schema: what to execute to reach ``version``."""

    version: int
    name: str
    sql: str
    online: bool

    @property
    def is_empty(self) -> bool:
        """Nothing to execute (only comments), yet the version still counts as applied."""
        return _is_comment_only(self.sql)


@attrs.frozen
class _Part:
    text: str
    listen_notify_only: bool


@attrs.frozen
class MigrationTemplate:
    """A migration file as parsed, before the schema name is known."""

    version: int
    name: str
    online: bool
    parts: tuple[_Part, ...]
    dollar_tags: frozenset[str]

    def render(self, quoted_schema: str, use_listen_notify: bool) -> Migration:
        for tag in self.dollar_tags:
            if tag in quoted_schema:
                # The name would end the dollar-quoted body it is interpolated into.
                raise ValueError(
                    f"schema name {quoted_schema} contains {tag}, which migration "
                    f"{self.version} uses as a dollar quote"
                )
        text = "".join(
            part.text for part in self.parts if use_listen_notify or not part.listen_notify_only
        )
        return Migration(
            version=self.version,
            name=self.name,
            sql=text.replace(SCHEMA_PLACEHOLDER, quoted_schema),
            online=self.online,
        )


def quote_identifier(name: str) -> str:
    """``name`` as a PostgreSQL quoted identifier: in double quotes, inner ones doubled.

    Always quoted, so case and spaces survive. Names PostgreSQL would reject or silently
    truncate are refused here instead, so the schema created is the schema named.
    """
    if not name:
        raise ValueError("a schema name cannot be empty")
    if "\x00" in name:
        raise ValueError("a schema name cannot contain NUL characters")
    if len(name.encode("utf-8")) > _MAX_IDENTIFIER_BYTES:
        raise ValueError(
            f"schema name {name!r} is longer than PostgreSQL's "
            f"{_MAX_IDENTIFIER_BYTES}-byte identifier limit"
        )
    return '"' + name.replace('"', '""') + '"'


def expected_versions() -> list[int]:
    """Every version that has a migration file: the own history and the shared block."""
    return [*range(1, OWN_HISTORY_END + 1), *range(SHARED_MIGRATION_BASE, LATEST_VERSION + 1)]


def migrations_dir() -> Traversable:
    """Where the corpus lives: packaged with the wheel, or the repository's ``migrations/``."""
    packaged = resources.files("dbos_trio") / "_migrations"
    if packaged.is_dir():
        return packaged
    # Source checkout / editable install: src/dbos_trio/_sysdb/migrations.py -> repo root.
    checkout = Path(__file__).resolve().parents[3] / "migrations"
    if checkout.is_dir():
        return checkout
    raise MigrationCorpusError(
        f"no migration files: neither {packaged} nor {checkout} is a directory"
    )


def _is_comment_only(text: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("--") for line in text.splitlines())


def parse_migration(file_name: str, text: str) -> MigrationTemplate:
    """Parse one migration file, checking the conventions in the module docstring."""
    match = _FILE_NAME.match(file_name)
    if match is None:
        raise MigrationCorpusError(f"{file_name}: not named NNNN_short_name.sql")
    version, name = int(match.group(1)), match.group(2)
    lines = text.splitlines(keepends=True)
    online = bool(lines) and lines[0].strip() == ONLINE_MARKER

    parts: list[_Part] = []
    current: list[str] = []
    inside = False
    for number, line in enumerate(lines, start=1):
        marker = line.strip()
        if marker in (BEGIN_LISTEN_NOTIFY, END_LISTEN_NOTIFY):
            if (marker == BEGIN_LISTEN_NOTIFY) == inside:
                raise MigrationCorpusError(f"{file_name}:{number}: unbalanced {marker!r}")
            parts.append(_Part("".join(current), listen_notify_only=inside))
            current = []
            inside = not inside
            # The marker lines go with the block, so dropping it leaves no stray comment.
            parts.append(_Part(line, listen_notify_only=True))
            continue
        current.append(line)
    if inside:
        raise MigrationCorpusError(f"{file_name}: {BEGIN_LISTEN_NOTIFY!r} is never closed")
    parts.append(_Part("".join(current), listen_notify_only=False))

    leftover = text.replace(SCHEMA_PLACEHOLDER, "")
    if "{{" in leftover or "}}" in leftover:
        raise MigrationCorpusError(f"{file_name}: unknown {{{{...}}}} placeholder")
    header = lines[1 if online else 0] if len(lines) > (1 if online else 0) else ""
    if not header.startswith("-- ") or header.strip() in (BEGIN_LISTEN_NOTIFY, ONLINE_MARKER):
        raise MigrationCorpusError(f"{file_name}: must start with a comment saying what and why")
    if online:
        statements = [line for line in lines if line.strip() and not line.lstrip().startswith("--")]
        body = "".join(statements).strip().rstrip(";")
        # CREATE/DROP INDEX CONCURRENTLY refuses to run in a multi-statement query string.
        if ";" in body or "CONCURRENTLY" not in body.upper():
            raise MigrationCorpusError(
                f"{file_name}: an online migration is one CONCURRENTLY statement"
            )
    return MigrationTemplate(
        version=version,
        name=name,
        online=online,
        parts=tuple(part for part in parts if part.text),
        dollar_tags=frozenset(_DOLLAR_TAG.findall(text)),
    )


@functools.cache
def load_templates() -> tuple[MigrationTemplate, ...]:
    """The whole corpus, parsed and checked for completeness, in version order."""
    directory = migrations_dir()
    templates = sorted(
        (
            parse_migration(entry.name, entry.read_text(encoding="utf-8"))
            for entry in directory.iterdir()
            if entry.is_file() and entry.name.endswith(".sql")
        ),
        key=lambda template: template.version,
    )
    found = [template.version for template in templates]
    if found != expected_versions():
        missing = sorted(set(expected_versions()) - set(found))
        extra = sorted(v for v in set(found) - set(expected_versions()))
        duplicated = sorted({v for v in found if found.count(v) > 1})
        raise MigrationCorpusError(
            f"migration corpus in {directory} is incomplete or inconsistent: "
            f"missing {missing}, unexpected {extra}, duplicated {duplicated}"
        )
    return tuple(templates)


def build_migrations(schema: str = "dbos", use_listen_notify: bool = True) -> list[Migration]:
    """Every migration (1-47, 100-LATEST_VERSION) rendered for ``schema``, in order.

    Padding versions 48-99 have no entry: whoever applies these records them implicitly by
    bumping the version past them. Migrations whose only content was LISTEN/NOTIFY-specific
    are kept (``is_empty``) so callers can still account for their version.
    """
    quoted = quote_identifier(schema)
    return [template.render(quoted, use_listen_notify) for template in load_templates()]
