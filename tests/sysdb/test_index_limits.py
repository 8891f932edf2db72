"""The 600-byte text limit, measured against PostgreSQL's b-tree entry limit.

``core/validate.py`` allows ids, names, topics and keys of at most 600 bytes (UTF-8)
because the widest b-tree entry of the system schema holds four such values (the
partition-dequeue index: queue name, partition key, workflow id, application name) and
an entry may hold at most 2704 bytes on 8 kB pages. Proven here, on a migrated database:

* the catalog agrees: among every b-tree index of schema ``dbos``, the one with the most
  text columns is the partition-dequeue index, and all but one of its text columns (the
  status its predicate pins to ``ENQUEUED``/``PENDING``) are free — four;
* 600 bytes of incompressible text (random characters of one to four bytes, and random
  hex) in every text column the public API writes — that index's four, and every other
  indexed one — is stored, through ``DBOS`` and ``Client`` (class and instance names,
  ``VARCHAR(255)`` columns, at 255 characters: this test found that the byte limit alone
  let 600 ASCII characters through to a raw "value too long" error);
* the limit is real: the same kind of text at 700 bytes in those four columns is refused
  by PostgreSQL ("index row size ... exceeds btree version 4 maximum 2704"), so the
  values are not being compressed under it, and the measured largest size that fits
  (four equal values) lies between 600 and 700 bytes.

Incompressible matters: PostgreSQL compresses an index entry's large values before it
checks the limit, so repetitive text ("x" * 700) would fit and prove nothing.

PostgreSQL only: SQLite has no entry size limit.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
import trio

from dbos_trio import DBOS, Client, Config, EnqueueOptions, SetWorkflowID
from dbos_trio._core.validate import MAX_NAME_CHARS, MAX_TEXT_BYTES

from support.backends import SCHEMA, connected, query, status_row

pytestmark = pytest.mark.postgres_only_module("PostgreSQL's b-tree entry size limit")

BTREE_LIMIT = 2704  # bytes, btree version 4 on 8 kB pages
WIDEST_INDEX = "idx_workflow_status_partition_dequeue_v3"
FREE_TEXT_COLUMNS = {"queue_name", "queue_partition_key", "workflow_uuid", "application_name"}

# Every b-tree index of the schema: its table, name, text columns (key and INCLUDE),
# and its predicate.
INDEX_CATALOG = """
SELECT t.relname, i.relname,
       array_agg(a.attname::text ORDER BY k.ord)
           FILTER (WHERE a.atttypid IN ('text'::regtype, 'varchar'::regtype)),
       pg_get_expr(ix.indpred, ix.indrelid)
FROM pg_index ix
JOIN pg_class i ON i.oid = ix.indexrelid
JOIN pg_am am ON am.oid = i.relam
JOIN pg_class t ON t.oid = ix.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
CROSS JOIN LATERAL unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
WHERE n.nspname = %s AND am.amname = 'btree'
GROUP BY t.relname, i.relname, ix.indpred, ix.indrelid
"""

# Characters of 1, 2, 3 and 4 bytes in UTF-8 (no NUL, no surrogates, no C1 controls).
_RANGES = [(0x21, 0x7E), (0xA1, 0x7FF), (0x800, 0xD7FF), (0xE000, 0xFFFD), (0x10000, 0x10FFFF)]


def multibyte(size: int, rng: random.Random) -> str:
    """Exactly ``size`` bytes of UTF-8: random characters of every width."""
    chars: list[str] = []
    used = 0
    while used < size:
        low, high = rng.choice(_RANGES)
        char = chr(rng.randint(low, high))
        if used + len(char.encode("utf-8")) > size:
            char = chr(rng.randint(0x21, 0x7E))
        chars.append(char)
        used += len(char.encode("utf-8"))
    text = "".join(chars)
    assert len(text.encode("utf-8")) == size
    return text


def hexadecimal(size: int, rng: random.Random) -> str:
    """Exactly ``size`` bytes: hex digits of random bytes."""
    return rng.randbytes((size + 1) // 2).hex()[:size]


KINDS: dict[str, Callable[[int, random.Random], str]] = {
    "multibyte": multibyte,
    "hex": hexadecimal,
}


@pytest.fixture
def url(system_database_url: str) -> str:
    return system_database_url


async def btree_indexes(url: str) -> list[tuple[str, str, list[str], str | None]]:
    rows = await query(url, INDEX_CATALOG, SCHEMA)
    return [(table, name, list(texts or []), predicate) for table, name, texts, predicate in rows]


async def test_the_widest_btree_entry_holds_four_free_text_values(url: str) -> None:
    indexes = await btree_indexes(url)
    assert len(indexes) > 20  # the whole schema, not an empty catalog

    widest = max(indexes, key=lambda index: len(index[2]))
    table, name, texts, predicate = widest
    assert (table, name) == ("workflow_status", WIDEST_INDEX)
    assert set(texts) == FREE_TEXT_COLUMNS | {"status"}
    # status is not free: the predicate pins it to two short words.
    assert predicate is not None and "ENQUEUED" in predicate and "PENDING" in predicate
    assert "queue_partition_key IS NOT NULL" in predicate
    # Every other b-tree entry holds at most three text values.
    others = [index for index in indexes if index[1] != WIDEST_INDEX]
    assert max(len(index[2]) for index in others) <= 3
    # So four free values at the limit, plus the status and the fixed-size columns,
    # must fit in one entry: the arithmetic the limit rests on.
    assert 4 * (MAX_TEXT_BYTES + 4) + 64 < BTREE_LIMIT


@pytest.mark.parametrize("kind", KINDS)
async def test_600_bytes_of_incompressible_text_in_every_indexed_column_is_stored(
    url: str, kind: str
) -> None:
    rng = random.Random(f"index-limits-{kind}")

    def text() -> str:
        return KINDS[kind](MAX_TEXT_BYTES, rng)

    def name_text() -> str:  # class and instance names are VARCHAR(255) as well
        return text()[:MAX_NAME_CHARS]

    # The application name is the only text the API bounds lower (3-256 characters of
    # [a-z0-9_-], by Config); a client may still write 600-byte ones (below).
    app_name = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789_-") for _ in range(256))
    version, executor, served = text(), text(), text()
    workflow_name, step_name, child_name = text(), text(), text()
    dbos = DBOS(
        Config(app_name=app_name, database_url=url, app_version=version, executor_id=executor)
    )
    dbos.register_queue(served, polling_interval_sec=0.1)

    @dbos.step(name=step_name)
    async def step() -> str:
        return "stepped"

    @dbos.workflow(name=child_name)
    async def child() -> str:
        return "child"

    ids = {name: text() for name in ("main", "destination", "child", "fork", "queued", "dedup")}
    event_key, stream_key, topic, idempotency_key = text(), text(), text(), text()

    @dbos.workflow(name=workflow_name)
    async def main(destination: str) -> str:
        assert await step() == "stepped"
        await dbos.set_event(event_key, 1)
        await dbos.write_stream(stream_key, 2)
        await dbos.close_stream(stream_key)
        await dbos.send(destination, 3, topic=topic, idempotency_key=idempotency_key)
        with SetWorkflowID(ids["child"]):
            assert await child() == "child"
        return "done"

    client_app, unserved = text(), text()
    async with dbos.launched(), Client(url, app_name=client_app) as client:
        with SetWorkflowID(ids["destination"]):
            assert await child() == "child"
        with SetWorkflowID(ids["main"]), trio.fail_after(30):
            assert await main(ids["destination"]) == "done"
        with SetWorkflowID(ids["fork"]):
            forked = await dbos.fork_workflow(ids["main"], 1, queue_name=served)
        with trio.fail_after(30):
            assert await forked.get_result() == "done"
        # The widest entry: all four free values at 600 bytes, in an ENQUEUED row with a
        # partition key (nobody serves the queue, so it stays in the partial index).
        await client.enqueue(
            EnqueueOptions(
                workflow_name=workflow_name,
                queue_name=unserved,
                workflow_id=ids["queued"],
                queue_partition_key=text(),
                application_name=text(),
                app_version=text(),
                class_name=name_text(),
                instance_name=name_text(),
                authenticated_user=text(),
                authenticated_roles=[text()],
            ),
            ids["destination"],
        )
        await client.enqueue(
            EnqueueOptions(
                workflow_name=workflow_name,
                queue_name=unserved,
                workflow_id=ids["dedup"],
                deduplication_id=text(),
            ),
            ids["destination"],
        )

    queued = await status_row(url, ids["queued"])
    assert queued["status"] == "ENQUEUED"
    sizes = {column: len(queued[column].encode("utf-8")) for column in FREE_TEXT_COLUMNS}
    assert sizes == dict.fromkeys(FREE_TEXT_COLUMNS, MAX_TEXT_BYTES)
    assert (await status_row(url, ids["dedup"]))["deduplication_id"] is not None
    assert (await status_row(url, ids["fork"]))["forked_from"] == ids["main"]
    assert (await status_row(url, ids["child"]))["parent_workflow_id"] == ids["main"]
    # Every other indexed text column the API writes holds its 600-byte value.
    checks: list[tuple[str, tuple[Any, ...]]] = [
        ("SELECT count(*) FROM {t}queues WHERE name = %s", (served,)),
        ("SELECT count(*) FROM {t}application_versions WHERE version_name = %s", (version,)),
        ("SELECT count(*) FROM {t}workflow_events WHERE key = %s", (event_key,)),
        ("SELECT count(*) FROM {t}workflow_events_history WHERE key = %s", (event_key,)),
        ("SELECT count(*) FROM {t}streams WHERE key = %s", (stream_key,)),
        ("SELECT count(*) FROM {t}notifications WHERE topic = %s", (topic,)),
        ("SELECT count(*) FROM {t}operation_outputs WHERE function_name = %s", (step_name,)),
    ]
    for statement, params in checks:
        found = await query(url, statement, *params)
        assert found[0][0] >= 1, statement
    # The message id is the idempotency key and the destination: 1202 bytes in one entry.
    message_ids = await query(url, "SELECT message_uuid FROM {t}notifications")
    assert [len(m[0].encode("utf-8")) for m in message_ids] == [2 * MAX_TEXT_BYTES + 2]


async def insert_widest(url: str, size: int, rng: random.Random) -> None:
    """A row whose partition-dequeue entry holds four ``size``-byte incompressible values."""
    queue, partition, workflow_id, application = (multibyte(size, rng) for _ in range(4))
    async with connected(url) as conn:
        await conn.execute(
            f"INSERT INTO {SCHEMA}.workflow_status (workflow_uuid, status, name, queue_name, "
            "queue_partition_key, application_name, created_at, updated_at) "
            "VALUES (%s, 'ENQUEUED', 'w', %s, %s, %s, 1, 1)",
            (workflow_id, queue, partition, application),
            prepare=False,
        )


async def test_four_700_byte_values_are_refused_by_the_index(url: str) -> None:
    rng = random.Random("index-limits-refused")
    with pytest.raises(psycopg.Error) as raised:
        await insert_widest(url, 700, rng)
    message = str(raised.value)
    assert "index row size" in message or "index row requires" in message, message
    assert WIDEST_INDEX in message
    assert str(BTREE_LIMIT) in message
    assert await query(url, "SELECT count(*) FROM {t}workflow_status") == [(0,)]
    # Repetitive text of the same size is compressed in the entry, and fits: the
    # refusal above is about incompressible text, which is what the limit must cover.
    async with connected(url) as conn:
        await conn.execute(
            f"INSERT INTO {SCHEMA}.workflow_status (workflow_uuid, status, name, queue_name, "
            "queue_partition_key, application_name, created_at, updated_at) "
            "VALUES (%s, 'ENQUEUED', 'w', %s, %s, %s, 1, 1)",
            ("w" * 700, "q" * 700, "p" * 700, "a" * 700),
            prepare=False,
        )


async def test_the_largest_size_that_fits_lies_between_600_and_700_bytes(url: str) -> None:
    # Four equal incompressible values, by bisection: the measured ceiling of the limit.
    rng = random.Random("index-limits-bisect")
    fits, refused = MAX_TEXT_BYTES, 700
    await insert_widest(url, fits, rng)  # 600 fits, directly too
    while refused - fits > 1:
        size = (fits + refused) // 2
        try:
            await insert_widest(url, size, rng)
        except psycopg.Error as error:
            assert WIDEST_INDEX in str(error), str(error)
            refused = size
        else:
            fits = size
    # About 4 * (size + 4-byte header) + status, priority, created_at and the entry
    # header: the ceiling measured on PostgreSQL 15 is 664 bytes; 600 leaves room for it.
    assert MAX_TEXT_BYTES < fits < 700
    assert 4 * fits < BTREE_LIMIT < 4 * (fits + 40)
