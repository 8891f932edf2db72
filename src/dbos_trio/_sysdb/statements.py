"""Named SQL statements, and the small interface the shared backend code runs them through.

Invariant: every statement a backend issues is written in one of its ``queries/*.sql``
files under a name, and the shared implementation of the protocol
(:mod:`dbos_trio._sysdb.operations`) refers to statements only by name, through a
:class:`StatementRunner`. Both backends name their statements alike, take the same
parameters and return the same columns, so one piece of Python serves both; what differs
is only the SQL text, and how each engine runs it.

Where the statements live: SQL both engines run as written is in the portable files of
:mod:`dbos_trio._sysdb.sql` (``sql/queries/*.sql``); each backend's own files hold only the
statements whose SQL must differ. A backend loads both sets, and a name defined twice —
in one file, across files, or in both sets — is refused.

The files: a block starts with ``-- name: <name>``; the comment lines after it say what
it is for and are dropped. A block may hold several statements separated by ``;`` at the
end of a line — a *script*: they run in order in one transaction and the last one's rows
are the result (SQLite has no data-modifying CTEs, so what PostgreSQL says in one
statement it says in a few). ``{placeholder}`` names (``{schema}``, ``{now_ms}``, and
``{in:<parameter>}`` for membership in a list parameter) are replaced in a single pass
when the file is rendered, so a value that itself contains braces is never expanded
again; a placeholder left without a value is an error. Portable statements write their
parameters in sqlite3's named style (``:name``); the PostgreSQL backend converts them to
psycopg's (``%(name)s``) when it loads them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Protocol, TypeVar

import attrs

from dbos_trio._sysdb.retry import Retrier

T = TypeVar("T")
Row = tuple[Any, ...]
Params = Mapping[str, Any]

_NAME_LINE = re.compile(r"^-- name: (?P<name>[a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{(?P<name>[a-z_]+)(?::(?P<argument>[a-z_]+))?\}")
_NAMED_PARAMETER = re.compile(r"(?<![:\w]):(?P<name>[a-z_][a-z0-9_]*)")
PORTABLE_PACKAGE = "dbos_trio._sysdb.sql"
"""The package whose ``queries/*.sql`` both backends load."""
Value = str | Callable[[str], str]
_STATEMENT_END = re.compile(r";[ \t]*(?:\n|\Z)")
_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


class StatementError(Exception):
    """A statements file is malformed (a name defined twice, a placeholder unfilled)."""


@attrs.frozen
class Statement:
    """One named block: its statement(s), rendered, and whether it writes."""

    name: str
    parts: tuple[str, ...]
    writes: bool

    @property
    def text(self) -> str:
        """The SQL of a single-statement block."""
        if len(self.parts) != 1:
            raise StatementError(f"statement {self.name!r} is a script of {len(self.parts)} parts")
        return self.parts[0]


def _blocks(source: Traversable) -> dict[str, str]:
    text = source.read_text("utf-8")
    matches = list(_NAME_LINE.finditer(text))
    blocks: dict[str, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        body = "\n".join(
            line for line in text[match.end() : end].splitlines() if not line.startswith("--")
        ).strip()
        if match["name"] in blocks:
            raise StatementError(f"{source.name}: statement {match['name']!r} is defined twice")
        blocks[match["name"]] = body
    return blocks


def _files(package: str, directory: str) -> list[Traversable]:
    folder = resources.files(package).joinpath(directory)
    return sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith(".sql")),
        key=lambda entry: entry.name,
    )


@functools.cache
def load_templates(package: str, directory: str = "queries") -> dict[str, str]:
    """Every block of every ``.sql`` file in ``package``/``directory``, unrendered."""
    templates: dict[str, str] = {}
    for source in _files(package, directory):
        for name, body in _blocks(source).items():
            if name in templates:
                raise StatementError(f"{directory}/{source.name}: {name!r} is defined twice")
            templates[name] = body
    return templates


def merged(portable: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The portable templates and a backend's own, refusing a name defined in both."""
    twice = sorted(set(portable) & set(own))
    if twice:
        raise StatementError(f"defined both as portable and by the backend: {', '.join(twice)}")
    return {**portable, **own}


def render(template: str, values: Mapping[str, Value], *, name: str = "") -> str:
    """``template`` with each ``{placeholder}`` replaced by its value, in one pass.

    A value is a string, or for ``{name:argument}`` a function of the argument."""

    def fill(match: re.Match[str]) -> str:
        try:
            value = values[match["name"]]
        except KeyError:
            raise StatementError(
                f"statement {name!r}: no value for placeholder {match.group()}"
            ) from None
        argument = match["argument"]
        if callable(value) != (argument is not None):
            raise StatementError(f"statement {name!r}: placeholder {match.group()} is misused")
        return value(argument) if callable(value) else value

    return _PLACEHOLDER.sub(fill, template)


def to_psycopg(sql: str) -> str:
    """Portable SQL in psycopg's parameter style: ``:name`` becomes ``%(name)s`` and a
    literal ``%`` is doubled (``::`` casts and ``{in:name}`` placeholders are left alone)."""
    return _NAMED_PARAMETER.sub(r"%(\g<name>)s", sql.replace("%", "%%"))


def split_script(body: str) -> tuple[str, ...]:
    """The statements of a block, split at ``;`` ending a line."""
    parts = tuple(part.strip() for part in _STATEMENT_END.split(body))
    return tuple(part for part in parts if part)


def build_statements(
    templates: Mapping[str, str],
    values: Mapping[str, Value],
    *,
    scripts_allowed: bool,
    deferred: frozenset[str] = frozenset(),
    convert: Callable[[str], str] | None = None,
) -> dict[str, Statement]:
    """Render every template (converted first, if ``convert`` is given: placeholder values are
    then never converted); ``deferred`` ones are left out (the backend renders their variants
    itself, with :func:`render`)."""
    statements: dict[str, Statement] = {}
    for name, template in templates.items():
        if name in deferred:
            continue
        source = template if convert is None else convert(template)
        parts = split_script(render(source, values, name=name))
        if len(parts) != 1 and not scripts_allowed:
            raise StatementError(f"statement {name!r} must be a single statement")
        statements[name] = Statement(name, parts, writes=bool(_WRITES.search(template)))
    return statements


class Transaction(Protocol):
    """Statements inside one transaction (see :meth:`StatementRunner.transaction`)."""

    async def one(self, name: str, params: Params) -> Row | None:
        """The first row of the named statement (of its last part), or None."""

    async def all(self, name: str, params: Params) -> list[Row]:
        """Every row of the named statement (of its last part)."""

    async def run(self, name: str, params: Params) -> int:
        """Run the named statement; the number of rows its last part changed."""


class StatementRunner(Transaction, Protocol):
    """How the shared backend code reaches a database.

    Outside :meth:`transaction`, each call is a transaction of its own: a writing
    statement (or script) commits when the call returns. A driver error comes out as one
    of the kinds of :mod:`dbos_trio._sysdb.errors`, after the backend's retry policy gave
    up on it. Cancellation: a call cancelled before it reached the database changed
    nothing; one cancelled while a statement ran either committed or rolled back whole.
    """

    retrier: Retrier

    async def query(self, sql: str, params: Sequence[Any], *, listing: bool = False) -> list[Row]:
        """Every row of an ad hoc read-only query (positional ``?``/``%s`` parameters);
        ``listing``: bounded by the backend's listing timeout, if it has one."""

    async def transaction(self, body: Callable[[Transaction], Awaitable[T]]) -> T:
        """Run ``body`` in one transaction: committed if it returns, rolled back if it
        raises. ``body`` awaits only the transaction's own statements (on SQLite it must
        not suspend at all: the one connection serves every task). It may run more than
        once, when a transient error made the backend retry the whole transaction."""
