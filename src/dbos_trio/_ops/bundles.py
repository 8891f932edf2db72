"""Workflow bundles: a workflow's rows exported as one JSON document, imported elsewhere.

A bundle is ``{"format": "dbos-trio-workflow-bundle", "version": 1, "exported_at": ms,
"workflows": [...]}``, each workflow every row the system database holds of it
(:class:`~dbos_trio._sysdb.interfaces.bundles.WorkflowRows`: the status row, its inputs
and outcome rows, checkpoints, events and their history, stream values, the messages sent
to it), by column name. Children (``--children``) are more workflows of the same list.
Exported through a payload store, a bundle whose rows reference stored values also carries
those entries (``"payloads"``) and is version 2 (:mod:`dbos_trio._ops.bundle_payloads`).

Invariants, and why:

* **Payloads as stored**: every payload column is copied as the text the database holds
  (never decoded), so a bundle of another SDK's rows, or of pickles, imports byte for byte;
  a payload store entry a row references travels beside it, byte for byte too.
* **Checked before anything is written**: a document that is not a bundle of a version
  this code reads, names an id twice or carries a bad entry, raises
  :class:`~dbos_trio.DBOSException` before the import; so does one carrying entries for a
  target with no payload store, or an id that exists in the target unless ``overwrite``;
  the entries are then written, and the rows in one transaction.
* **A bundle replays without a database**: :func:`bundle_histories` gives ``check`` the
  same histories a database would.

Cancellation: an export only reads; an import's rows are one transaction, whole or not at
all (entries written before a cancellation stay, unreferenced, until the garbage collector
removes them).
"""

from __future__ import annotations

import json
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from dbos_trio._core import validate
from dbos_trio._engine.runtime.replay.history import RecordedHistory
from dbos_trio._engine.state import Runtime
from dbos_trio._ops import bundle_payloads
from dbos_trio._ops.reach import Reach
from dbos_trio._sysdb.interfaces.bundles import WorkflowRows
from dbos_trio._sysdb.records import RecordedStep, WorkflowRow
from dbos_trio.errors import DBOSException, DBOSNonExistentWorkflowError

BUNDLE_FORMAT = "dbos-trio-workflow-bundle"
BUNDLE_VERSION = 1
# Version 1 and the "payloads" section: the payload store entries its rows reference.
PAYLOADS_BUNDLE_VERSION = 2
READABLE_VERSIONS = (BUNDLE_VERSION, PAYLOADS_BUNDLE_VERSION)
_TABLES = ("steps", "events", "event_history", "streams", "notifications")

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "PAYLOADS_BUNDLE_VERSION",
    "bundle_histories",
    "export_workflows",
    "import_bundle",
    "parse_bundle",
    "read_bundle_file",
    "unembedded_references",
]


def export_workflows(
    reach: Reach, workflow_ids: Sequence[str], *, children: bool = False, now_ms: int = 0
) -> Coroutine[Any, Any, dict[str, Any]]:
    """The bundle of ``workflow_ids`` (with their children, recursively, if asked).

    With a payload store (the reach's: ``Client(payload_store=...)``, the CLI's
    ``--payload-store``), every entry the rows reference is embedded (version 2); an entry
    the store lacks raises :class:`~dbos_trio.DBOSPayloadError` naming it and its row.
    Without one, references are copied as they are (version 1). A missing id raises
    :class:`~dbos_trio.DBOSNonExistentWorkflowError`; an empty list
    :class:`~dbos_trio.DBOSException`, before anything is read. Cancellation: it only
    reads.
    """
    ids = validate.texts(list(workflow_ids), "export workflow_ids")
    if not ids:
        raise DBOSException("export needs at least one workflow id")
    return _export(reach.runtime("export"), ids, children, now_ms)


async def _export(runtime: Runtime, ids: list[str], children: bool, now_ms: int) -> dict[str, Any]:
    exported: dict[str, WorkflowRows] = {}
    pending = list(dict.fromkeys(ids))
    asked = set(pending)
    while pending:
        workflow_id = pending.pop(0)
        if workflow_id in exported:
            continue
        rows = await runtime.sysdb.export_workflow_rows(workflow_id)
        if rows is None:
            if workflow_id in asked:
                raise DBOSNonExistentWorkflowError("target", workflow_id)
            continue  # a child deleted meanwhile
        exported[workflow_id] = rows
        if children:
            pending += await runtime.sysdb.list_children([workflow_id])
    document: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "exported_at": now_ms,
        "workflows": [_as_json(rows) for rows in exported.values()],
    }
    referenced = bundle_payloads.references(exported.values())
    store = runtime.codec.payload_store
    if referenced and store is not None:
        document["version"] = PAYLOADS_BUNDLE_VERSION
        document["payloads"] = await bundle_payloads.embedded(store, referenced)
    return document


def unembedded_references(document: Any) -> int:
    """How many payload store entries a (valid) bundle's rows reference that it does not
    carry: what an import elsewhere cannot resolve unless that store has them."""
    carried = document.get("payloads") or {}
    return sum(
        1 for sha256 in bundle_payloads.references(parse_bundle(document)) if sha256 not in carried
    )


def _as_json(rows: WorkflowRows) -> dict[str, Any]:
    return {
        "status": rows.status,
        "input": rows.input,
        "output": rows.output,
        **{table: getattr(rows, table) for table in _TABLES},
    }


def parse_bundle(document: Any) -> list[WorkflowRows]:
    """The workflows of a bundle document; :class:`~dbos_trio.DBOSException` saying what
    is wrong with one that is not a bundle this version reads."""
    if not isinstance(document, dict) or document.get("format") != BUNDLE_FORMAT:
        raise DBOSException(f"not a workflow bundle (expected format {BUNDLE_FORMAT!r})")
    version = document.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        readable = ", ".join(str(v) for v in READABLE_VERSIONS)
        raise DBOSException(
            f"bundle version {version!r} is not one this dbos-trio reads ({readable}): "
            "export it again with this version, or upgrade dbos-trio"
        )
    if version == PAYLOADS_BUNDLE_VERSION and "payloads" not in document:
        raise DBOSException("bundle version 2 needs its 'payloads' section")
    workflows = document.get("workflows")
    if not isinstance(workflows, list):
        raise DBOSException("bundle: 'workflows' must be a list")
    parsed: list[WorkflowRows] = []
    seen: set[str] = set()
    for index, entry in enumerate(workflows):
        where = f"bundle workflows[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("status"), dict):
            raise DBOSException(f"{where}: expected an object with a 'status' row")
        workflow_id = entry["status"].get("workflow_uuid")
        if not isinstance(workflow_id, str) or not workflow_id:
            raise DBOSException(f"{where}: its status row has no workflow_uuid")
        if workflow_id in seen:
            raise DBOSException(f"{where}: workflow {workflow_id} appears twice")
        seen.add(workflow_id)
        tables: dict[str, list[dict[str, Any]]] = {}
        for table in _TABLES:
            rows = entry.get(table, [])
            if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
                raise DBOSException(f"{where}: {table!r} must be a list of rows")
            tables[table] = rows
        for single in ("input", "output"):
            if entry.get(single) is not None and not isinstance(entry[single], dict):
                raise DBOSException(f"{where}: {single!r} must be a row or null")
        parsed.append(
            WorkflowRows(
                status=entry["status"],
                input=entry.get("input"),
                output=entry.get("output"),
                **tables,
            )
        )
    return parsed


def read_bundle_file(path: str | Path) -> dict[str, Any]:
    """A bundle read from ``path`` and checked (:func:`parse_bundle`); a file that cannot
    be read or is not JSON raises :class:`~dbos_trio.DBOSException` naming it."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as unreadable:
        raise DBOSException(f"cannot read bundle {path}: {unreadable}") from unreadable
    parse_bundle(document)
    return dict(document)


def import_bundle(
    reach: Reach, document: Any, *, overwrite: bool = False
) -> Coroutine[Any, Any, list[str]]:
    """Write every workflow of the bundle into the reach's database, in one transaction;
    the ids written. The payload store entries a version 2 bundle carries are written into
    the reach's payload store first (in worker threads).

    Raises :class:`~dbos_trio.DBOSException`, nothing written: a malformed bundle or entry
    (at the call); entries and no payload store configured (at the call, naming the
    missing store); existing ids, unless ``overwrite``. Cancellation: the rows are one
    transaction, whole or not at all; entries already written stay, unreferenced, for the
    garbage collector."""
    workflows = parse_bundle(document)
    entries = bundle_payloads.parse_payloads(document.get("payloads", {}))
    validate.boolean(overwrite, "import overwrite")
    runtime = reach.runtime("import")
    store = bundle_payloads.require_store(runtime.codec.payload_store, entries) if entries else None

    async def write() -> list[str]:
        if store is not None:
            if not overwrite:  # refused ids write nothing, entries included
                ids = [workflow.workflow_id for workflow in workflows]
                existing = sorted(await runtime.sysdb.existing_workflows(ids))
                if existing:
                    raise DBOSException(
                        f"workflow(s) {', '.join(existing)} already exist in this database: "
                        "nothing imported (import with overwrite to replace them)"
                    )
            await bundle_payloads.put_entries(store, entries)
        return await runtime.sysdb.import_workflow_rows(workflows, overwrite=overwrite)

    return write()


def bundle_histories(document: Any) -> list[RecordedHistory]:
    """The bundle's workflows as ``check`` replays them (no database)."""
    return [_history(rows) for rows in parse_bundle(document)]


def _history(rows: WorkflowRows) -> RecordedHistory:
    status = rows.status
    inputs = status.get("inputs") if rows.input is None else rows.input.get("inputs")
    outcome = rows.output or status
    row = WorkflowRow(
        workflow_id=rows.workflow_id,
        status=str(status.get("status")),
        name=status.get("name"),
        class_name=status.get("class_name"),
        config_name=status.get("config_name"),
        authenticated_user=status.get("authenticated_user"),
        assumed_role=status.get("assumed_role"),
        authenticated_roles=status.get("authenticated_roles"),
        inputs=inputs,
        output=outcome.get("output"),
        error=outcome.get("error"),
        serialization=status.get("serialization"),
        executor_id=status.get("executor_id"),
        created_at=status.get("created_at"),
        updated_at=status.get("updated_at"),
        application_version=status.get("application_version"),
        application_id=status.get("application_id"),
        application_name=status.get("application_name"),
        recovery_attempts=status.get("recovery_attempts"),
        queue_name=status.get("queue_name"),
        workflow_timeout_ms=status.get("workflow_timeout_ms"),
        workflow_deadline_epoch_ms=status.get("workflow_deadline_epoch_ms"),
        started_at_epoch_ms=status.get("started_at_epoch_ms"),
        deduplication_id=status.get("deduplication_id"),
        priority=status.get("priority"),
        queue_partition_key=status.get("queue_partition_key"),
        forked_from=status.get("forked_from"),
        was_forked_from=status.get("was_forked_from"),
        parent_workflow_id=status.get("parent_workflow_id"),
        delay_until_epoch_ms=status.get("delay_until_epoch_ms"),
        completed_at=status.get("completed_at"),
        owner_xid=status.get("owner_xid"),
        schedule_name=status.get("schedule_name"),
        attributes=status.get("attributes"),
    )
    steps = tuple(
        RecordedStep(
            function_id=int(step["function_id"]),
            function_name=str(step.get("function_name") or ""),
            output=step.get("output"),
            error=step.get("error"),
            serialization=step.get("serialization"),
            child_workflow_id=step.get("child_workflow_id"),
            started_at_ms=step.get("started_at_epoch_ms"),
            completed_at_ms=step.get("completed_at_epoch_ms"),
        )
        for step in rows.steps
    )
    return RecordedHistory(row=row, steps=steps)
