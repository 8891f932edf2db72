"""The named statements of ``queries.sql``, loaded once per process.

Keeping every statement in one commented file makes the whole conversation with SQLite
reviewable in one place, as on PostgreSQL. SQLite needs no rendering step: tables are
unqualified, so the text is used as written.
"""

from __future__ import annotations

import importlib.resources
import re
from functools import cache

_NAME_LINE = re.compile(r"^-- name: (?P<name>[a-z_]+)\s*$", re.MULTILINE)


@cache
def load(resource: str = "queries.sql") -> dict[str, str]:
    """Statement text by name; comment lines are dropped."""
    text = importlib.resources.files(__package__).joinpath(resource).read_text("utf-8")
    matches = list(_NAME_LINE.finditer(text))
    statements: dict[str, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        body = "\n".join(
            line for line in text[match.end() : end].splitlines() if not line.startswith("--")
        ).strip()
        if match["name"] in statements:
            raise ValueError(f"{resource}: statement {match['name']!r} is defined twice")
        statements[match["name"]] = body
    return statements


class Queries:
    """Attribute access to the statements (``q.claim``); an unknown name is an error."""

    def __init__(self) -> None:
        self._statements = load()

    def __getattr__(self, name: str) -> str:
        try:
            return self._statements[name]
        except KeyError:
            raise AttributeError(f"no query named {name!r}") from None
