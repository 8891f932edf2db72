"""SQLite's spelling of the workflow listing query (built in ``sysdb/sql/listing.py``).

Lists are JSON arrays unpacked with ``json_each``; the id prefix is matched
case-sensitively with ``substr`` (SQLite's LIKE ignores ASCII case, PostgreSQL's does
not); booleans are stored as 0/1; an OFFSET without a LIMIT needs ``LIMIT -1``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


class SQLiteListing:
    placeholder = "?"
    table_prefix = ""

    def member_of(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{column} IN (SELECT value FROM json_each(?))", [json.dumps(list(values))]

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        return f"substr({column}, 1, ?) = ?", [len(prefix), prefix]

    def boolean(self, value: bool) -> Any:
        return 1 if value else 0

    def paging(self, limit: int | None, offset: int | None) -> tuple[str, list[Any]]:
        if limit is None and offset is None:
            return "", []
        clause, params = " LIMIT ?", [-1 if limit is None else limit]
        if offset is not None:
            clause, params = clause + " OFFSET ?", [*params, offset]
        return clause, params


SQLITE_LISTING = SQLiteListing()
