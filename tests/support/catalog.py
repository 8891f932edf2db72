"""One query that describes everything DBOS puts in its system schema, as comparable text.

Shared by the migration tests and by ``tests/sysdb/snapshots/make_official_catalog.py`` (which runs
in a virtualenv holding the official ``dbos`` package), so both sides are dumped the SAME way
and a difference in the dump is a difference in the schema. Only sync psycopg is needed.

The schema name is normalised to ``{{schema}}`` (the placeholder our migration files use), so
a database migrated into ``"My Schema"`` compares equal to one migrated into ``dbos``.
Everything is rendered with ``search_path = pg_catalog`` so that the ``pg_get_*def`` functions
always schema-qualify names instead of depending on the session's search_path.

Function bodies are deliberately not compared: our PL/pgSQL is our own; what must agree is the
callable surface (name, arguments with defaults, result) and the settings that change how the
body runs (language, volatility, strictness, security, parallel safety, ``proconfig``).
"""

from __future__ import annotations

import psycopg

# Each row is (section order, table, name, description); the text form is one line per row.
CATALOG_QUERY = """
WITH ns AS (
    SELECT oid, quote_ident(nspname) || '.' AS qualified
    FROM pg_namespace WHERE nspname = %(schema)s
),
rels AS (
    SELECT c.oid, c.relname, c.relkind, c.relpersistence, c.reloptions
    FROM pg_class c JOIN ns ON c.relnamespace = ns.oid
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
),
items AS (
    SELECT 1 AS section, r.relname::text AS tbl, ''::text AS name,
           format('relation kind=%%s persistence=%%s options=%%s',
                  r.relkind, r.relpersistence, coalesce(r.reloptions::text, '-')) AS detail
    FROM rels r
    UNION ALL
    SELECT 2, r.relname::text,
           lpad((row_number() OVER (PARTITION BY r.oid ORDER BY a.attnum))::text, 3, '0')
               || ' ' || a.attname::text,
           format_type(a.atttypid, a.atttypmod)
               || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
               || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
               || CASE WHEN a.attidentity <> ''
                       THEN ' IDENTITY ' || a.attidentity::text ELSE '' END
               || CASE WHEN a.attgenerated <> ''
                       THEN ' GENERATED ' || a.attgenerated::text ELSE '' END
               || CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
                       THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END
    FROM rels r
    JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
    JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    UNION ALL
    SELECT 3, r.relname::text, ic.relname::text,
           pg_get_indexdef(ix.indexrelid)
               || CASE WHEN ix.indisvalid THEN '' ELSE ' [INVALID]' END
    FROM rels r
    JOIN pg_index ix ON ix.indrelid = r.oid
    JOIN pg_class ic ON ic.oid = ix.indexrelid
    UNION ALL
    SELECT 4, r.relname::text, con.conname::text,
           con.contype::text || ' ' || pg_get_constraintdef(con.oid)
    FROM rels r
    JOIN pg_constraint con ON con.conrelid = r.oid
    UNION ALL
    SELECT 5, '', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
           format('args=[%%s] returns=%%s language=%%s volatility=%%s strict=%%s '
                  'security_definer=%%s leakproof=%%s parallel=%%s kind=%%s config=%%s',
                  pg_get_function_arguments(p.oid), pg_get_function_result(p.oid),
                  l.lanname, p.provolatile, p.proisstrict, p.prosecdef, p.proleakproof,
                  p.proparallel, p.prokind, coalesce(p.proconfig::text, '-'))
    FROM pg_proc p
    JOIN ns ON p.pronamespace = ns.oid
    JOIN pg_language l ON l.oid = p.prolang
    UNION ALL
    SELECT 6, r.relname::text, tg.tgname::text,
           pg_get_triggerdef(tg.oid) || ' enabled=' || tg.tgenabled::text
    FROM rels r
    JOIN pg_trigger tg ON tg.tgrelid = r.oid AND NOT tg.tgisinternal
    UNION ALL
    SELECT 7, '', t.typname::text, 'type ' || t.typtype::text
    FROM pg_type t JOIN ns ON t.typnamespace = ns.oid
    WHERE t.typrelid = 0 AND t.typcategory <> 'A'
)
SELECT i.section, i.tbl, i.name,
       replace(i.detail, (SELECT qualified FROM ns), '{{schema}}.') AS detail
FROM items i
ORDER BY i.section, i.tbl, i.name, detail
"""

_SECTION_NAMES = {
    1: "relation",
    2: "column",
    3: "index",
    4: "constraint",
    5: "function",
    6: "trigger",
    7: "type",
}


def dump_catalog(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> str:
    """The catalog of ``schema`` as text: one line per object, schema name normalised.

    Runs in its own transaction (rolled back) so it can pin ``search_path`` locally.
    """
    with conn.transaction(force_rollback=True), conn.cursor() as cur:
        cur.execute("SET LOCAL search_path = pg_catalog")
        cur.execute(CATALOG_QUERY, {"schema": schema})
        rows = cur.fetchall()
    lines = []
    for section, table, name, detail in rows:
        assert isinstance(section, int)
        where = ".".join(part for part in (str(table), str(name)) if part)
        lines.append(f"{_SECTION_NAMES[section]} {where}: {detail}")
    return "\n".join(lines) + "\n"
