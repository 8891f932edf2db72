"""Named SQL statements, and the small interface the shared backend code runs them through.

Invariant: every statement a backend issues is written in one of its ``queries/*.sql``
files under a name, and the shared implementation of the protocol
(:mod:`dbos_trio.sysdb.operations`) refers to statements only by name, through a
:class:`StatementRunner`. Both backends name their statements alike, take the same
parameters and return the same columns, so one piece of Python serves both; what differs
is only the SQL text, and how each engine runs it.

The files: a block starts with ``-- name: <name>``; the comment lines after it say what
it is for and are dropped. A block may hold several statements separated by ``;`` at the
end of a line — a *script*: they run in order in one transaction and the last one's rows
are the result (SQLite has no data-modifying CTEs, so what PostgreSQL says in one
statement it says in a few). ``{placeholder}`` names (``{schema}``, ...) are replaced in a
single pass when the file is rendered, so a value that itself contains braces is never
expanded again. A name defined twice, or a placeholder left without a value, is an error
when the statements are loaded.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Protocol, TypeVar

import attrs

T = TypeVar("T")
Row = tuple[Any, ...]
Params = Mapping[str, Any]

_NAME_LINE = re.compile(r"^-- name: (?P<name>[a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{(?P<name>[a-z_]+)\}")
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


def load_templates(package: str, directory: str = "queries") -> dict[str, str]:
    """Every block of every ``.sql`` file in ``package``/``directory``, unrendered."""
    templates: dict[str, str] = {}
    for source in _files(package, directory):
        for name, body in _blocks(source).items():
            if name in templates:
                raise StatementError(f"{directory}/{source.name}: {name!r} is defined twice")
            templates[name] = body
    return templates


def render(template: str, values: Mapping[str, str], *, name: str = "") -> str:
    """``template`` with each ``{placeholder}`` replaced by its value, in one pass."""

    def fill(match: re.Match[str]) -> str:
        try:
            return values[match["name"]]
        except KeyError:
            raise StatementError(
                f"statement {name!r}: no value for placeholder {{{match['name']}}}"
            ) from None

    return _PLACEHOLDER.sub(fill, template)


def split_script(body: str) -> tuple[str, ...]:
    """The statements of a block, split at ``;`` ending a line."""
    parts = tuple(part.strip() for part in _STATEMENT_END.split(body))
    return tuple(part for part in parts if part)


def build_statements(
    templates: Mapping[str, str],
    values: Mapping[str, str],
    *,
    scripts_allowed: bool,
    deferred: frozenset[str] = frozenset(),
) -> dict[str, Statement]:
    """Render every template; ``deferred`` ones keep their placeholders (the backend
    renders their variants itself, with :func:`render`)."""
    statements: dict[str, Statement] = {}
    for name, template in templates.items():
        if name in deferred:
            continue
        parts = split_script(render(template, values, name=name))
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
    of the kinds of :mod:`dbos_trio.sysdb.errors`, after the backend's retry policy gave
    up on it. Cancellation: a call cancelled before it reached the database changed
    nothing; one cancelled while a statement ran either committed or rolled back whole.
    """

    async def query(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """Every row of an ad hoc read-only query (positional ``?``/``%s`` parameters)."""

    async def transaction(self, body: Callable[[Transaction], Awaitable[T]]) -> T:
        """Run ``body`` in one transaction: committed if it returns, rolled back if it
        raises. ``body`` awaits only the transaction's own statements (on SQLite it must
        not suspend at all: the one connection serves every task). It may run more than
        once, when a transient error made the backend retry the whole transaction."""
