"""SQLite's spelling of the workflow listing query (built in ``sysdb/sql/listing.py``).

Lists are JSON arrays unpacked with ``json_each``; the id prefix is matched
case-sensitively with ``substr`` (SQLite's LIKE ignores ASCII case, PostgreSQL's does
not); booleans are stored as 0/1; an OFFSET without a LIMIT needs ``LIMIT -1``.

Attribute containment (PostgreSQL's JSONB ``@>``) is spelled with ``json_each`` over the
stored TEXT, one ``EXISTS`` per top-level key of the filter: a scalar matches a stored
scalar of the same JSON kind and value (numbers compare as numbers, so 1 matches 1.0 as
in JSONB); a nested object or array must equal the stored one (PostgreSQL would match
a stored superset of it too — the one documented difference, see docs/surface.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dbos_trio._sysdb.sql.listing import prefix_successor


class SQLiteListing:
    placeholder = "?"
    table_prefix = ""
    byte_length = "length(CAST({} AS BLOB))"  # bytes (length() of TEXT counts characters)

    def member_of(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{column} IN (SELECT value FROM json_each(?))", [json.dumps(list(values))]

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        exact = f"substr({column}, 1, ?) = ?"
        upper = prefix_successor(prefix)
        if upper is None:
            return exact, [len(prefix), prefix]
        # TEXT compares as BINARY (UTF-8 bytes: code-point order) here, so the range holds
        # exactly the prefixed ids and the primary key's index serves it; without it a
        # prefix listing walked the time index over the whole table (92 ms at 1M rows).
        return f"{column} >= ? AND {column} < ? AND {exact}", [prefix, upper, len(prefix), prefix]

    def boolean(self, value: bool) -> Any:
        return 1 if value else 0

    def attributes_contain(self, column: str, attributes: str) -> tuple[str, list[Any]]:
        wanted: dict[str, Any] = json.loads(attributes)
        if not wanted:
            return f"{column} IS NOT NULL", []  # every object contains the empty one
        conditions: list[str] = []
        params: list[Any] = []
        for key, value in wanted.items():
            match = f"EXISTS (SELECT 1 FROM json_each({column}) AS a WHERE a.key = ? AND "
            if value is None:
                conditions.append(match + "a.type = 'null')")
                params.append(key)
            elif isinstance(value, bool):
                conditions.append(match + "a.type = ?)")
                params.extend([key, "true" if value else "false"])
            elif isinstance(value, int | float):
                conditions.append(match + "a.type IN ('integer', 'real') AND a.atom = ?)")
                params.extend([key, value])
            elif isinstance(value, str):
                conditions.append(match + "a.type = 'text' AND a.atom = ?)")
                params.extend([key, value])
            else:
                conditions.append(match + "a.type = ? AND json(a.value) = json(?))")
                kind = "object" if isinstance(value, dict) else "array"
                params.extend([key, kind, json.dumps(value, separators=(",", ":"))])
        return "(" + " AND ".join(conditions) + ")", params

    def paging(self, limit: int | None, offset: int | None) -> tuple[str, list[Any]]:
        if limit is None and offset is None:
            return "", []
        clause, params = " LIMIT ?", [-1 if limit is None else limit]
        if offset is not None:
            clause, params = clause + " OFFSET ?", [*params, offset]
        return clause, params


SQLITE_LISTING = SQLiteListing()
