"""The workflow listing query, built once for both backends from one list of filters.

What differs between the dialects — list membership, prefix match, placeholders,
booleans, paging, the table prefix — is supplied by the backend as a
:class:`ListingDialect`; the filters, columns and order are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from dbos_trio._sysdb.bounded import Bounded, PayloadBound, clipped_fields
from dbos_trio._sysdb.records import WorkflowFilters, WorkflowRow

WORKFLOW_FIELDS = [
    "workflow_id",
    "status",
    "name",
    "class_name",
    "config_name",
    "authenticated_user",
    "assumed_role",
    "authenticated_roles",
    "inputs",
    "output",
    "error",
    "serialization",
    "executor_id",
    "created_at",
    "updated_at",
    "application_version",
    "application_id",
    "application_name",
    "recovery_attempts",
    "queue_name",
    "workflow_timeout_ms",
    "workflow_deadline_epoch_ms",
    "started_at_epoch_ms",
    "deduplication_id",
    "priority",
    "queue_partition_key",
    "forked_from",
    "was_forked_from",
    "parent_workflow_id",
    "delay_until_epoch_ms",
    "completed_at",
    "owner_xid",
    "schedule_name",
    "attributes",
]
_WAS_FORKED_FROM = WORKFLOW_FIELDS.index("was_forked_from")
# The payload fields of a listed row; a bounded listing appends their sizes, in this order.
PAYLOAD_FIELDS = ("inputs", "output", "error")

_COLUMNS = (
    "ws.workflow_uuid, ws.status, ws.name, ws.class_name, ws.config_name, "
    "ws.authenticated_user, ws.assumed_role, ws.authenticated_roles, {inputs}, {output}, "
    "{error}, ws.serialization, ws.executor_id, ws.created_at, ws.updated_at, "
    "ws.application_version, ws.application_id, ws.application_name, ws.recovery_attempts, "
    "ws.queue_name, ws.workflow_timeout_ms, ws.workflow_deadline_epoch_ms, "
    "ws.started_at_epoch_ms, ws.deduplication_id, ws.priority, ws.queue_partition_key, "
    "ws.forked_from, ws.was_forked_from, ws.parent_workflow_id, ws.delay_until_epoch_ms, "
    "ws.completed_at, ws.owner_xid, ws.schedule_name, ws.attributes"
)


def workflow_row(row: Sequence[Any]) -> WorkflowRow:
    """A listed row, in ``WORKFLOW_FIELDS`` order (booleans may come back as 0/1)."""
    values = list(row)
    flag = values[_WAS_FORKED_FROM]
    values[_WAS_FORKED_FROM] = None if flag is None else bool(flag)
    return WorkflowRow(**dict(zip(WORKFLOW_FIELDS, values, strict=True)))


def prefix_successor(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix``, in code-point
    order; None when there is none to write (last character U+10FFFF, or a surrogate).
    Where text sorts by code point, ``prefix <= id < prefix_successor(prefix)`` is an index
    range holding exactly the ids that start with ``prefix``."""
    if not prefix:
        return None
    following = ord(prefix[-1]) + 1
    if following > 0x10FFFF or 0xD800 <= following <= 0xDFFF:
        return None
    return prefix[:-1] + chr(following)


class ListingDialect(Protocol):
    """How one backend spells the parts of the listing query that differ."""

    placeholder: str
    table_prefix: str  # the (quoted) schema and a dot, or nothing
    byte_length: str  # the size in bytes of the expression formatted into it ({})

    def member_of(self, column: str, values: Sequence[str]) -> tuple[str, list[Any]]: ...

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]: ...

    def boolean(self, value: bool) -> Any: ...

    def paging(self, limit: int | None, offset: int | None) -> tuple[str, list[Any]]: ...

    def attributes_contain(self, column: str, attributes: str) -> tuple[str, list[Any]]:
        """Rows whose attributes (a JSON object) contain the JSON object ``attributes``."""


def list_workflows_query(
    f: WorkflowFilters, dialect: ListingDialect, payload_bound: PayloadBound | None = None
) -> tuple[str, list[Any]]:
    """The listing query for ``f``: one WHERE clause per set filter, values as parameters,
    newest or oldest first by creation time (then id, for a total order).

    With ``payload_bound`` (the faces' previews, :mod:`dbos_trio._sysdb.bounded`), each
    loaded payload over its ``whole_up_to`` bytes is selected as its first ``head_chars``
    characters, and the row ends with the payloads' sizes in bytes (``PAYLOAD_FIELDS``
    order), so no payload over the bound is transferred whole."""
    conditions: list[str] = []
    params: list[Any] = []
    p = dialect.placeholder

    def add(condition: str, *values: Any) -> None:
        conditions.append(condition)
        params.extend(values)

    for column, values in (
        ("ws.workflow_uuid", f.workflow_ids),
        ("ws.status", f.statuses),
        ("ws.name", f.names),
        ("ws.application_version", f.app_versions),
        ("ws.queue_name", f.queue_names),
        ("ws.executor_id", f.executor_ids),
        ("ws.forked_from", f.forked_from),
        ("ws.parent_workflow_id", f.parent_workflow_ids),
        ("ws.authenticated_user", f.users),
        ("ws.application_name", f.application_names),
        ("ws.schedule_name", f.schedule_names),
    ):
        if values is not None:
            condition, condition_params = dialect.member_of(column, values)
            add(condition, *condition_params)
    if f.application_names is None and f.scope_application is not None:
        add(f"(ws.application_name = {p} OR ws.application_name IS NULL)", f.scope_application)
    if f.workflow_id_prefix is not None:
        prefix = f.workflow_id_prefix
        prefixes = (prefix,) if isinstance(prefix, str) else prefix
        either: list[str] = []
        for prefix in prefixes:
            condition, condition_params = dialect.starts_with("ws.workflow_uuid", prefix)
            either.append(f"({condition})")
            params.extend(condition_params)
        conditions.append(either[0] if len(either) == 1 else f"({' OR '.join(either)})")
    for column, bound, operator in (
        ("ws.created_at", f.created_after_ms, ">="),
        ("ws.created_at", f.created_before_ms, "<="),
        ("ws.completed_at", f.completed_after_ms, ">="),
        ("ws.completed_at", f.completed_before_ms, "<="),
        ("ws.started_at_epoch_ms", f.dequeued_after_ms, ">="),
        ("ws.started_at_epoch_ms", f.dequeued_before_ms, "<="),
    ):
        if bound is not None:
            add(f"{column} {operator} {p}", bound)
    if f.queues_only:
        add("ws.queue_name IS NOT NULL")
    if f.was_forked_from is not None:
        add(f"ws.was_forked_from = {p}", dialect.boolean(f.was_forked_from))
    if f.is_fork is not None:
        add(f"ws.forked_from IS {'NOT ' if f.is_fork else ''}NULL")
    if f.attributes is not None:
        condition, condition_params = dialect.attributes_contain("ws.attributes", f.attributes)
        add(condition, *condition_params)
    if f.has_parent is not None:
        add(f"ws.parent_workflow_id IS {'NOT ' if f.has_parent else ''}NULL")
    payloads_of = {
        "inputs": "COALESCE(wi.inputs, ws.inputs)" if f.load_input else "NULL",
        "output": "COALESCE(wo.output, ws.output)" if f.load_output else "NULL",
        "error": "COALESCE(wo.error, ws.error)" if f.load_output else "NULL",
    }
    if payload_bound is None:
        columns = _COLUMNS.format(**payloads_of)
    else:
        columns = _bounded_columns(payloads_of, dialect, payload_bound)
    t = dialect.table_prefix
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    order = "DESC" if f.sort_desc else "ASC"
    ordering = f" ORDER BY ws.created_at {order}, ws.workflow_uuid {order}"
    payloads = (
        f"LEFT JOIN {t}workflow_input AS wi ON wi.workflow_uuid = ws.workflow_uuid "
        f"LEFT JOIN {t}workflow_output AS wo ON wo.workflow_uuid = ws.workflow_uuid"
    )
    if f.limit is None and f.offset is None:
        query = f"SELECT {columns} FROM {t}workflow_status AS ws {payloads}{where}{ordering}"
        return query, params
    # A page is chosen on the narrow (id, created_at) first, then only its rows are read
    # whole and joined to their payloads: joined first, every row skipped by OFFSET, and
    # every row tied on created_at at the page's edge (an enqueue burst in one millisecond),
    # cost two payload lookups and was sorted wide. Measured at 1M rows (benchmarks/growth):
    # OFFSET 5000 took 126 ms that way and 9 ms this way; a 50-row page behind 10,000 ties
    # took 94 ms.
    paging, paging_params = dialect.paging(f.limit, f.offset)
    page = (
        f"SELECT ws.workflow_uuid, ws.created_at FROM {t}workflow_status AS ws"
        f"{where}{ordering}{paging}"
    )
    query = (
        f"SELECT {columns} FROM ({page}) AS page "
        f"JOIN {t}workflow_status AS ws ON ws.workflow_uuid = page.workflow_uuid "
        f"{payloads}{ordering}"
    )
    return query, params + paging_params


def _bounded_columns(
    payloads_of: dict[str, str], dialect: ListingDialect, bound: PayloadBound
) -> str:
    # The bound's numbers are written into the text (ints, checked by PayloadBound), not
    # passed as parameters: every parameter of this query follows its WHERE clause.
    whole, head = int(bound.whole_up_to), int(bound.head_chars)
    shown: dict[str, str] = {}
    sizes: list[str] = []
    for field in PAYLOAD_FIELDS:
        expression = payloads_of[field]
        if expression == "NULL":
            shown[field], size = "NULL", "NULL"
        else:
            size = dialect.byte_length.format(expression)
            shown[field] = (
                f"CASE WHEN {size} <= {whole} THEN {expression} "
                f"ELSE substr({expression}, 1, {head}) END"
            )
        sizes.append(size)
    return _COLUMNS.format(**shown) + ", " + ", ".join(sizes)


def bounded_workflow_row(row: Sequence[Any], bound: PayloadBound) -> Bounded[WorkflowRow]:
    """A row of a bounded listing (:func:`list_workflows_query` with ``bound``)."""
    count = len(WORKFLOW_FIELDS)
    sizes = dict(zip(PAYLOAD_FIELDS, row[count:], strict=True))
    return Bounded(workflow_row(row[:count]), clipped_fields(sizes, bound))
