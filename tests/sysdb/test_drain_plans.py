"""A drain's two hot writes find their rows by primary key, whatever the statistics say
(issue 34), on PostgreSQL.

The claim's UPDATE and the group-committed outcomes (``record_outcomes``) take the rows
they change by id (``= ANY(ARRAY(...))``) and check their status as a fence. Written as
``status = 'ENQUEUED'`` / ``'PENDING'``, that fence let a planner whose statistics were
taken before the backlog existed (autovacuum had not analyzed since) pick the status's
partial index through a bitmap: every ENQUEUED entry of the in-flight index read for a
claim of 16 rows (~5,000 in a drain of 5,000), every PENDING entry, dead ones included,
for an outcome batch. The plans are read here in exactly that state: the tables analyzed
empty, then a backlog of 5,000 ENQUEUED rows and 16 PENDING ones written.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from dbos_trio._sysdb.postgres.backend import claim_statement, statement_text
from dbos_trio._sysdb.rows import claim_params

from support.backends import backend_of, execute
from support.sysdb_records import claim_request

APP = "plans"


@pytest.fixture
async def url(system_database_url: str) -> str:
    if backend_of(system_database_url) != "postgres":
        pytest.skip("PostgreSQL's planner")
    await execute(system_database_url, "ANALYZE {t}workflow_status")
    await execute(system_database_url, "ANALYZE {t}workflow_input")
    await execute(
        system_database_url,
        "INSERT INTO {t}workflow_status (workflow_uuid, status, name, queue_name, "
        "application_name, application_version, created_at, owner_xid) "
        "SELECT 'w' || g, CASE WHEN g <= 16 THEN 'PENDING' ELSE 'ENQUEUED' END, 'noop', 'q', "
        "%s, 'v1', g, CASE WHEN g <= 16 THEN 'owner' END FROM generate_series(1, 5016) AS g",
        APP,
    )
    await execute(
        system_database_url,
        "INSERT INTO {t}workflow_input (workflow_uuid, inputs) "
        "SELECT workflow_uuid, 'x' FROM {t}workflow_status",
    )
    return system_database_url


def plan_of(url: str, statement: str, params: dict[str, Any]) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        row = conn.execute("EXPLAIN (FORMAT JSON) " + statement, params).fetchone()
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found.extend(nodes(child))
    return found


def indexes_read(plan: dict[str, Any]) -> set[str]:
    """The indexes a (sub)plan reads, whichever way (index, bitmap or index-only scan)."""
    return {node["Index Name"] for node in nodes(plan) if "Index Name" in node}


def update_scan(plan: dict[str, Any]) -> dict[str, Any]:
    """The node the UPDATE of workflow_status reads its target rows from."""
    updates = [
        node
        for node in nodes(plan)
        if node["Node Type"] == "ModifyTable"
        and node.get("Operation") == "Update"
        and node.get("Relation Name") == "workflow_status"
    ]
    assert len(updates) == 1, json.dumps(plan)
    [scan] = [child for child in updates[0]["Plans"] if child["Parent Relationship"] == "Outer"]
    return scan


async def test_the_claim_updates_its_rows_found_by_primary_key(url: str) -> None:
    request = claim_request(
        "q", workflow_names=("noop",), application_name=APP, local_budget=16, now_ms=1
    )
    params = claim_params(request)
    scan = update_scan(
        plan_of(url, claim_statement("dbos", consistent=False, partitioned=False), params)
    )
    assert indexes_read(scan) == {"workflow_status_pkey"}, json.dumps(scan)


async def test_an_outcome_batch_updates_its_rows_found_by_primary_key(url: str) -> None:
    batch = [
        {
            "workflow_id": f"w{i}",
            "owner_xid": "owner",
            "status": "SUCCESS",
            "output": "o",
            "error": None,
            "completed_at": 2,
        }
        for i in range(1, 17)
    ]
    scan = update_scan(
        plan_of(url, statement_text("dbos", "record_outcomes"), {"batch": json.dumps(batch)})
    )
    # Under the join with the batch: the rows themselves come by primary key.
    assert indexes_read(scan) == {"workflow_status_pkey"}, json.dumps(scan)
