"""The official ``dbos`` 3.4 package's side of the datasource interop tests.

Run ONLY with the Python of the virtualenv that holds ``dbos==3.4.*`` (see
``tests/integration/interop/conftest.py``); like ``driver.py`` it imports nothing from
dbos_trio or the test suite. Each command prints one line ``RESULT <json>``.

The application (mirrored by the test's dbos_trio application: same app name, version,
workflow and transaction names) has an official ``SQLAlchemyDatasource`` on the same
database as its system database (schema ``dbos``), and two workflows of one transaction:

* ``ds_interop_ok(tag)`` runs ``ds_increment``, which adds 1 to ``ds_counters`` row 1 and
  returns the new value;
* ``ds_interop_err(tag)`` runs ``ds_refuse``, which inserts row 2 and raises
  ``ValueError("refused <tag>")``; the workflow returns ``"caught <message>"``.

Commands:

* ``crash URL OK_ID ERR_ID``: start both workflows, and die (``os._exit``) once both
  transactions have committed their ``datasource_outputs`` rows, before either step row is
  written — the process is held at the step-row write, where a real crash would land.
* ``recover URL OK_ID ERR_ID``: launch, resume the two PENDING workflows (they belong to
  other executors), and report their results and how many times the transaction bodies
  ran here.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

APP_NAME = "ds-interop"
APP_VERSION = "ds-v1"
HELD = frozenset({"ds_increment", "ds_refuse"})
RUNS: dict[str, int] = {"ds_increment": 0, "ds_refuse": 0}


def emit(payload: Any) -> None:
    sys.stdout.write("RESULT " + json.dumps(payload, default=repr) + "\n")
    sys.stdout.flush()


def build(url: str) -> dict[str, Any]:
    import sqlalchemy as sa
    from dbos import DBOS, SQLAlchemyDatasource

    DBOS(
        config={
            "name": APP_NAME,
            "system_database_url": url,
            "application_version": APP_VERSION,
            "log_level": "WARNING",
        }
    )
    ds = SQLAlchemyDatasource.create(url)

    @ds.transaction(name="ds_increment")
    def ds_increment(tag: str) -> int:
        RUNS["ds_increment"] += 1
        found = ds.sql_session().execute(
            sa.text("UPDATE ds_counters SET n = n + 1 WHERE id = 1 RETURNING n")
        )
        return int(found.scalar_one())

    @ds.transaction(name="ds_refuse")
    def ds_refuse(tag: str) -> None:
        RUNS["ds_refuse"] += 1
        ds.sql_session().execute(sa.text("INSERT INTO ds_counters (id, n) VALUES (2, 1)"))
        raise ValueError(f"refused {tag}")

    @DBOS.workflow(name="ds_interop_ok")
    def ds_interop_ok(tag: str) -> int:
        return ds_increment(tag)

    @DBOS.workflow(name="ds_interop_err")
    def ds_interop_err(tag: str) -> str:
        try:
            ds_refuse(tag)
        except ValueError as error:
            return f"caught {error}"
        return "not refused"

    return {"ok": ds_interop_ok, "err": ds_interop_err}


def checkpoints(url: str, workflow_ids: list[str]) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM dbos.datasource_outputs WHERE workflow_id = ANY(%s)",
            (workflow_ids,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def crash(url: str, ok_id: str, err_id: str) -> None:
    from dbos import DBOS, SetWorkflowID
    from dbos._dbos import _get_dbos_instance

    workflows = build(url)
    DBOS.launch()
    sys_db = _get_dbos_instance()._sys_db
    original = sys_db.record_operation_result

    def record(result: Any, **kwargs: Any) -> None:
        if result["function_name"] in HELD:
            threading.Event().wait()  # held here until the process dies
        original(result, **kwargs)

    sys_db.record_operation_result = record  # type: ignore[method-assign]
    with SetWorkflowID(ok_id):
        DBOS.start_workflow(workflows["ok"], "official")
    with SetWorkflowID(err_id):
        DBOS.start_workflow(workflows["err"], "official")
    deadline = time.monotonic() + 30
    while checkpoints(url, [ok_id, err_id]) < 2:
        if time.monotonic() > deadline:
            raise SystemExit("the transactions did not commit their checkpoints")
        time.sleep(0.02)
    emit({"runs": RUNS})
    os._exit(0)  # a crash: no shutdown, no step rows, no outcomes


def recover(url: str, ok_id: str, err_id: str) -> None:
    from dbos import DBOS

    build(url)
    DBOS.launch()
    try:
        # They belong to dbos_trio's crashed executors: resume them here.
        DBOS.resume_workflow(ok_id)
        DBOS.resume_workflow(err_id)
        results = {
            "ok": DBOS.retrieve_workflow(ok_id).get_result(polling_interval_sec=0.1),
            "err": DBOS.retrieve_workflow(err_id).get_result(polling_interval_sec=0.1),
        }
        emit({"results": results, "runs": RUNS})
    finally:
        DBOS.destroy(destroy_registry=True)


def main(argv: list[str]) -> None:
    command, url, ok_id, err_id = argv
    if command == "crash":
        crash(url, ok_id, err_id)
    elif command == "recover":
        recover(url, ok_id, err_id)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.exit(1)
