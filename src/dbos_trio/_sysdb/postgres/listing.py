"""PostgreSQL's spelling of the workflow listing's dialect-specific parts.

Invariant: a prefix filter is also a primary-key range only where the database's default
collation orders text by code point (``orders_by_code_point``); elsewhere the range would
skip rows that sort differently, so LIKE alone is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dbos_trio._sysdb.sql.listing import prefix_successor


class PostgresListing:
    """PostgreSQL's spelling of the listing query's dialect-specific parts."""

    placeholder = "%s"
    byte_length = "octet_length({})"

    def __init__(self, quoted_schema: str) -> None:
        self.table_prefix = quoted_schema + "."
        # Whether the database's default collation orders text by code point (C, POSIX,
        # C.UTF-8 of libc); None until asked (see PostgresSystemDatabase.list_workflows).
        self.bytewise: bool | None = None

    def member_of(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s)", [list(values)]

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        like = f"{column} LIKE %s"
        upper = prefix_successor(prefix) if self.bytewise else None
        if upper is None:
            return like, [escaped + "%"]
        # LIKE alone cannot use the primary key's b-tree unless the collation is "C"
        # exactly (C.UTF-8 is not recognised): a prefix listing read the whole table
        # (1.0 s at 1M rows). The range narrows it to an index range; LIKE stays for
        # exactness. Only sound where text sorts by code point (``bytewise``).
        return f"{column} >= %s AND {column} < %s AND {like}", [prefix, upper, escaped + "%"]

    def boolean(self, value: bool) -> Any:
        return value

    def attributes_contain(self, column: str, attributes: str) -> tuple[str, list[Any]]:
        # JSONB containment, served by the GIN index of migration 40.
        return f"{column} @> %s::jsonb", [attributes]

    def paging(self, limit: int | None, offset: int | None) -> tuple[str, list[Any]]:
        clause, params = "", []
        if limit is not None:
            clause, params = clause + " LIMIT %s", [limit]
        if offset is not None:
            clause, params = clause + " OFFSET %s", [*params, offset]
        return clause, params


# Collations of libc whose order is plain code-point order, as the server names them.
_CODE_POINT_COLLATIONS = frozenset({"C", "POSIX", "C.UTF-8", "C.utf8"})

DEFAULT_COLLATION = (
    "SELECT datcollate, to_jsonb(d) ->> 'datlocprovider' FROM pg_database AS d "
    "WHERE datname = current_database()"
)


def orders_by_code_point(collation: str | None, provider: str | None) -> bool:
    """Whether a database default collation sorts text by code point (so a prefix is a
    range). ``provider`` is None before PostgreSQL 15, where the default is always libc."""
    return provider in (None, "c") and collation in _CODE_POINT_COLLATIONS
