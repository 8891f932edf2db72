"""A checksum of every table of the system schema, to prove that a call wrote nothing.

:func:`table_checksums` returns ``{table: (row count, digest)}`` for every table the
migrations made — on PostgreSQL every table of schema ``dbos`` (from ``pg_tables``), on
SQLite every table in ``sqlite_master`` (``sqlite_sequence`` included: an AUTOINCREMENT
insert moves it even when the row is gone again). Comparing two snapshots taken around a
call shows whether it committed anything, and which table it touched.

The digest is taken over every row's full text, in a fixed order: on PostgreSQL in one
statement on the server (``md5`` of ``string_agg`` of each row's ``::text``), on SQLite
over the rows as Python reads them back. Both are read on a connection of the test's own
(:func:`support.backends.query`), never the executor's.
"""

from __future__ import annotations

import hashlib

from support.backends import SCHEMA, backend_of, query

Checksums = dict[str, tuple[int, str]]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def table_names(url: str) -> list[str]:
    """The tables of the system schema, by name."""
    if backend_of(url) == "sqlite":
        rows = await query(url, "SELECT name FROM sqlite_master WHERE type = 'table'")
    else:
        rows = await query(url, "SELECT tablename FROM pg_tables WHERE schemaname = %s", SCHEMA)
    names = sorted(str(row[0]) for row in rows)
    assert names, f"no tables in the system database at {url}"
    return names


async def table_checksums(url: str) -> Checksums:
    """``{table: (row count, digest of every row)}`` for every table of the system schema."""
    names = await table_names(url)
    if backend_of(url) == "sqlite":
        found: Checksums = {}
        for name in names:
            rows = await query(url, f"SELECT * FROM {_quoted(name)}")
            digest = hashlib.md5(usedforsecurity=False)
            for text in sorted(repr(row) for row in rows):
                digest.update(text.encode("utf-8", "backslashreplace") + b"\n")
            found[name] = (len(rows), digest.hexdigest())
        return found
    parts = [
        f"SELECT '{name}', count(*), md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), ''))"
        f" FROM {{t}}{_quoted(name)} t"
        for name in names
    ]
    rows = await query(url, " UNION ALL ".join(parts))
    return {str(name): (int(count), str(digest)) for name, count, digest in rows}


def changed_tables(before: Checksums, after: Checksums) -> list[str]:
    """The tables whose rows differ between two snapshots (or that appeared/vanished)."""
    return sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )


async def assert_unchanged(url: str, before: Checksums, what: str = "the call") -> None:
    """Fail, naming the tables, unless every table is as in ``before``."""
    after = await table_checksums(url)
    changed = changed_tables(before, after)
    assert not changed, f"{what} changed the system database: " + ", ".join(
        f"{name} {before.get(name)} -> {after.get(name)}" for name in changed
    )
