"""Regenerate the catalog snapshots of a system database migrated by the official ``dbos`` 3.4.

The snapshots are what ``tests/sysdb/test_migrations.py`` compares our migration corpus against, so
they must come from the official package, never from our own runner. Run this with a Python
that has ``dbos==3.4.*`` installed (it brings SQLAlchemy and psycopg), from the repo root::

    python -m venv /tmp/dbos-official
    /tmp/dbos-official/bin/pip install 'dbos==3.4.*'
    /tmp/dbos-official/bin/python tests/sysdb/snapshots/make_official_catalog.py

It uses the same PostgreSQL as the tests (``DBOS_TEST_DATABASE_URL``, default the local
trust-auth cluster), migrates throwaway databases with the official runner and writes:

* ``official_dbos_3_4_catalog.txt``: ``DBOS.migrate`` into schema ``dbos`` (LISTEN/NOTIFY on);
* ``official_dbos_3_4_catalog_no_listen_notify.txt``: the same with ``use_listen_notify=False``
  (through ``SystemDatabase.create``, the only way the official package exposes that flag).

As a sanity check it also migrates into a schema whose name needs quoting and insists the
normalised dump is the same as for ``dbos``.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for support.catalog and support.pg_support

import psycopg  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from psycopg.conninfo import conninfo_to_dict  # noqa: E402

from support.catalog import dump_catalog  # noqa: E402
from support.pg_support import fresh_database  # noqa: E402

ODD_SCHEMA = 'My Schema"x'


def _sqlalchemy_url(conninfo: str) -> str:
    params = conninfo_to_dict(conninfo)
    port = params.get("port")
    url = sa.URL.create(
        "postgresql+psycopg",
        username=str(params.get("user") or "") or None,
        password=str(params.get("password") or "") or None,
        host=str(params.get("host") or "") or None,
        port=int(port) if port else None,
        database=str(params["dbname"]),
    )
    return url.render_as_string(hide_password=False)


def _official_migrate(conninfo: str, schema: str, use_listen_notify: bool) -> None:
    from dbos import DBOS
    from dbos._serialization import DefaultSerializer
    from dbos._sys_db import SystemDatabase

    url = _sqlalchemy_url(conninfo)
    if use_listen_notify:
        DBOS.migrate(url, schema=schema)
        return
    sys_db = SystemDatabase.create(
        system_database_url=url,
        engine_kwargs={"pool_size": 2, "max_overflow": 0},
        engine=None,
        schema=schema,
        serializer=DefaultSerializer(),
        executor_id=None,
        use_listen_notify=False,
    )
    try:
        sys_db.run_migrations()
    finally:
        sys_db.destroy()


def _dump(conninfo: str, schema: str) -> str:
    with psycopg.connect(conninfo) as conn:
        version = conn.execute(
            psycopg.sql.SQL("SELECT version FROM {}.dbos_migrations").format(
                psycopg.sql.Identifier(schema)
            )
        ).fetchone()
        print(f"  {schema!r}: dbos_migrations.version = {version}")
        return dump_catalog(conn, schema)


def _migrated_catalog(schema: str, use_listen_notify: bool) -> str:
    with fresh_database("official") as conninfo:
        _official_migrate(conninfo, schema, use_listen_notify)
        return _dump(conninfo, schema)


def main() -> None:
    version = importlib.metadata.version("dbos")
    if not version.startswith("3.4."):
        sys.exit(f"need dbos 3.4.*, found {version}")
    print(f"official dbos {version}")
    outputs = {
        "official_dbos_3_4_catalog.txt": True,
        "official_dbos_3_4_catalog_no_listen_notify.txt": False,
    }
    for filename, use_listen_notify in outputs.items():
        text = _migrated_catalog("dbos", use_listen_notify)
        odd = _migrated_catalog(ODD_SCHEMA, use_listen_notify)
        if odd != text:
            sys.exit(f"official dump differs between schema 'dbos' and {ODD_SCHEMA!r}")
        (HERE / filename).write_text(text)
        print(f"wrote {filename} ({text.count(chr(10))} lines)")


if __name__ == "__main__":
    main()
