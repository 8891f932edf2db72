"""Loads the named statements of ``queries.sql``, rendered for one schema.

Keeping SQL in one commented file (rather than strings spread through methods) makes the
whole conversation with the server reviewable in one place, and rendering the schema name
once per backend keeps the hot path free of string work.
"""

from __future__ import annotations

import importlib.resources
import re
from functools import cache

_NAME_LINE = re.compile(r"^-- name: (?P<name>[a-z_]+)\s*$", re.MULTILINE)


def quote_identifier(name: str) -> str:
    """``name`` as a PostgreSQL quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


@cache
def _raw_queries(resource: str) -> dict[str, str]:
    text = importlib.resources.files(__package__).joinpath(resource).read_text("utf-8")
    queries: dict[str, str] = {}
    matches = list(_NAME_LINE.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        body = "\n".join(
            line for line in text[match.end() : end].splitlines() if not line.startswith("--")
        ).strip()
        queries[match["name"]] = body
    return queries


class Queries:
    """Attribute access to the statements of a ``.sql`` resource, for one schema."""

    def __init__(self, schema: str, resource: str = "queries.sql") -> None:
        quoted = quote_identifier(schema)
        self._statements = {
            name: body.replace("{schema}", quoted) for name, body in _raw_queries(resource).items()
        }
        self.schema = quoted

    def __getattr__(self, name: str) -> str:
        try:
            return self._statements[name]
        except KeyError:
            raise AttributeError(f"no query named {name!r}") from None
