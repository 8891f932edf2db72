"""The listing query's two growth fixes (issue 21) keep its answers exact, on both backends.

* A page (LIMIT/OFFSET) is chosen on (id, created_at) first and only its rows are read
  whole and joined to their payloads: pages must still partition the full, ordered listing,
  ties on created_at included, with every payload and filter as before.
* On PostgreSQL, where the database sorts text by code point, an id-prefix filter is also
  a range on the primary key (LIKE alone cannot use it): the range must never drop a match,
  whatever the prefix's last character, and the plan must be able to use the index. On
  SQLite (BINARY text: always code-point order) likewise, beside its ``substr`` match.

The benchmarks that motivated them are ``benchmarks/growth.py`` and
``benchmarks/growth_sqlite.py`` (G1 on each backend).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dbos_trio._sysdb.open import open_system_database
from dbos_trio._sysdb.postgres.listing import (
    PostgresListing,
    orders_by_code_point,
)
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.records import WorkflowFilters
from dbos_trio._sysdb.sql.listing import list_workflows_query, prefix_successor
from dbos_trio._sysdb.sqlite.listing import SQLITE_LISTING

from support.backends import backend_of, connected, query
from support.sysdb_records import T0, workflow


@pytest.fixture
def url(system_database_url: str) -> str:
    return system_database_url


@pytest.fixture
async def db(url: str) -> AsyncIterator[SystemDatabase]:
    opened = await open_system_database(url)
    try:
        yield opened
    finally:
        await opened.close()


async def _ids(db: SystemDatabase, **filters: Any) -> list[str]:
    return [row.workflow_id for row in await db.list_workflows(WorkflowFilters(**filters))]


async def test_pages_partition_the_listing_across_created_at_ties(db: SystemDatabase) -> None:
    # 13 rows, in runs of equal created_at, so page edges fall inside runs of ties.
    for i in range(13):
        await db.init_workflow(
            workflow(f"w{i:02d}", created_at_ms=T0 + i // 4, name=f"n{i % 2}"), None
        )
    for desc in (False, True):
        whole = await _ids(db, sort_desc=desc)
        assert len(whole) == 13
        keys = [(T0 + int(w[1:]) // 4, w) for w in whole]
        assert keys == sorted(keys, reverse=desc)
        pages = [await _ids(db, sort_desc=desc, limit=5, offset=o) for o in (0, 5, 10, 15)]
        assert [len(p) for p in pages] == [5, 5, 3, 0]
        assert [w for page in pages for w in page] == whole
        assert await _ids(db, sort_desc=desc, offset=4) == whole[4:]
        named = await _ids(db, sort_desc=desc, names=("n1",))
        assert await _ids(db, sort_desc=desc, names=("n1",), limit=2, offset=1) == named[1:3]
    [row] = await db.list_workflows(WorkflowFilters(limit=1, offset=3))
    assert row.workflow_id == "w03" and row.inputs == "inputs-of-w03" and row.status == "PENDING"


PREFIX_IDS = [
    "aa",
    "ab",
    "ab-1",
    "ab~",
    "ab\x7f",
    "abé",
    "ab\U0010ffff",
    "ab\U0010ffffz",
    "ac",
    "b",
    "\U0010ffff",
    "\U0010ffffx",
    "é1",
    "ê1",
]


@pytest.mark.parametrize(
    "prefix", ["ab", "a", "ab\U0010ffff", "\U0010ffff", "é", "ab~", "z", "abé", "ab-"]
)
async def test_a_prefix_filter_finds_exactly_the_ids_that_start_with_it(
    db: SystemDatabase, prefix: str
) -> None:
    for i, workflow_id in enumerate(PREFIX_IDS):
        await db.init_workflow(workflow(workflow_id, created_at_ms=T0 + i), None)
    expected = [w for w in PREFIX_IDS if w.startswith(prefix)]
    assert await _ids(db, workflow_id_prefix=prefix) == expected
    assert await _ids(db, workflow_id_prefix=prefix, limit=2, offset=1) == expected[1:3]


async def test_a_prefix_listing_can_use_the_primary_key_on_postgres(url: str) -> None:
    if backend_of(url) != "postgres":
        pytest.skip("PostgreSQL's planner")
    [(collation, provider)] = await query(
        url,
        "SELECT datcollate, to_jsonb(d) ->> 'datlocprovider' FROM pg_database AS d "
        "WHERE datname = current_database()",
    )
    if not orders_by_code_point(collation, provider):
        pytest.skip(f"the test database sorts by {collation!r}, not by code point")
    listing = PostgresListing('"dbos"')
    listing.bytewise = True
    sql, params = list_workflows_query(WorkflowFilters(workflow_id_prefix="ab", limit=5), listing)
    async with connected(url) as conn:
        await conn.execute("SET enable_seqscan = off")  # a tiny table: can, not would
        cur = await conn.execute("EXPLAIN " + sql, params, prepare=False)
        text = "\n".join(row[0] for row in await cur.fetchall())
    assert "workflow_status_pkey" in text and "Index Cond" in text, text


async def test_a_prefix_listing_searches_the_primary_key_on_sqlite(tmp_path: Path) -> None:
    """SQLite's case-sensitive prefix match (``substr``) cannot use an index; the range
    beside it can, where before a prefix listing walked the time index over every row."""
    path = tmp_path / "prefix.sqlite"
    sysdb = await open_system_database(f"sqlite:///{path}")
    await sysdb.close()
    filters = WorkflowFilters(workflow_id_prefix="ab", limit=5, sort_desc=True)
    sql, params = list_workflows_query(filters, SQLITE_LISTING)
    conn = sqlite3.connect(path)
    try:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
    finally:
        conn.close()
    assert any(
        "sqlite_autoindex_workflow_status_1 (workflow_uuid>? AND workflow_uuid<?)" in step
        for step in plan
    ), plan


def test_successor_is_the_least_string_above_every_extension() -> None:
    assert prefix_successor("ab") == "ac"
    assert prefix_successor("a~") == "a\x7f"
    assert prefix_successor("é") == "ê"
    assert prefix_successor("a\ud7ff") is None  # U+D800 is a surrogate: no range, LIKE alone
    assert prefix_successor("a\U0010ffff") is None
    assert prefix_successor("") is None


def test_only_code_point_collations_of_libc_make_a_prefix_a_range() -> None:
    assert orders_by_code_point("C", "c") and orders_by_code_point("C.UTF-8", None)
    assert orders_by_code_point("POSIX", "c") and orders_by_code_point("C.utf8", "c")
    assert not orders_by_code_point("en_US.UTF-8", "c")
    assert not orders_by_code_point("C", "i")  # an ICU default: its own rules
    assert not orders_by_code_point(None, None)
