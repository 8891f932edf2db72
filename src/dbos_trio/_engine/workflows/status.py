"""Public, read-only views of stored workflows and steps (fields as in ``dbos`` 3.4).

Payloads are decoded here, by each row's own ``serialization``. A payload that cannot be
decoded (a format or class this process does not have) is returned as its raw string
with a warning, so listing never fails because of one unreadable row.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import attrs

from dbos_trio._core.previews import (
    PREVIEW_CHARS,
    PREVIEW_THRESHOLD_BYTES,
    clipped_preview,
    preview_of,
)
from dbos_trio._serialization import Codec
from dbos_trio._sysdb.bounded import PayloadBound
from dbos_trio._sysdb.records import RecordedStep, WorkflowRow

logger = logging.getLogger("dbos_trio")

# What the faces read rows with (the bounded reads of dbos_trio._sysdb.bounded): a payload
# they would preview anyway comes as no more than the preview's characters.
PREVIEW_BOUND = PayloadBound(whole_up_to=PREVIEW_THRESHOLD_BYTES, head_chars=PREVIEW_CHARS)
NOT_CLIPPED: Mapping[str, int] = {}


@attrs.frozen(kw_only=True)
class WorkflowStatus:
    """One workflow's stored status, as ``get_workflow_status`` and ``list_workflows``
    return it (the fields of the official SDK's ``WorkflowStatus``).

    ``status`` is one of ENQUEUED, DELAYED, PENDING, SUCCESS, ERROR, CANCELLED,
    MAX_RECOVERY_ATTEMPTS_EXCEEDED. ``input``, ``output`` and ``error`` are decoded by the
    row's own ``serialization``; one this process cannot decode is its stored string.
    Times are epoch milliseconds. A read-only snapshot: it never changes after the read.
    """

    workflow_id: str
    status: str
    name: str | None
    class_name: str | None
    config_name: str | None
    authenticated_user: str | None
    assumed_role: str | None
    authenticated_roles: list[str] | None
    input: dict[str, Any] | None
    output: Any
    error: BaseException | str | None
    created_at: int | None
    updated_at: int | None
    queue_name: str | None
    executor_id: str | None
    app_version: str | None
    app_id: str | None
    workflow_timeout_ms: int | None
    workflow_deadline_epoch_ms: int | None
    deduplication_id: str | None
    priority: int | None
    queue_partition_key: str | None
    forked_from: str | None
    was_forked_from: bool
    parent_workflow_id: str | None
    dequeued_at: int | None
    delay_until_epoch_ms: int | None
    completed_at: int | None
    application_name: str | None
    recovery_attempts: int | None
    serialization: str | None
    # Columns read only once the backend's rows carry them (workflow_status.attributes and
    # .schedule_name); shard keys belong to sharded deployments, which this SDK is not.
    attributes: dict[str, Any] | None = None
    schedule_name: str | None = None
    shard_key: str | None = None
    parent_shard_key: str | None = None


@attrs.frozen(kw_only=True)
class StepInfo:
    """One recorded step of a workflow, as ``list_workflow_steps`` returns it.

    ``function_id`` is the step id (call order in the workflow), ``function_name`` the
    step's name (``DBOS.sleep``, ``DBOS.recv``, ... for the built-in ones), ``output`` or
    ``error`` its decoded outcome, ``child_workflow_id`` the workflow it started, if any.
    Times are epoch milliseconds.
    """

    function_id: int
    function_name: str
    output: Any
    error: BaseException | str | None
    child_workflow_id: str | None
    child_shard_key: str | None = None
    started_at_epoch_ms: int | None
    completed_at_epoch_ms: int | None


def _preview(codec: Codec, raw: str | None, fmt: str | None, clipped: int | None = None) -> Any:
    """What a face shows instead of decoding ``raw``, or None to decode it: the preview of
    a payload a bounded read clipped (``clipped``: its size), a payload store reference
    this process cannot resolve (its hash and size), or a preview of the stored text
    (resolved from the store first) when it is too large to show whole."""
    if raw is not None and clipped is not None:
        return clipped_preview(raw, clipped, fmt)
    ref = codec.stored_reference(raw)
    if ref is not None:
        return ref
    if codec.payload_store is not None and raw is not None:
        try:
            raw = codec.resolve(raw, fmt)
        except Exception:
            return None  # decoding then fails too, and says why (hash, store)
    return preview_of(raw, fmt)


async def stored_heads(
    codec: Codec, fields: Mapping[str, str | None]
) -> tuple[dict[str, str], dict[str, int]]:
    """For the faces' previews: of ``fields`` (payload field -> stored text), those holding a
    reference to a payload store entry over the preview threshold, read as only the entry's
    first characters (in a worker thread, when the store can read a part of one): the texts
    to show instead, and their sizes, for ``clipped``. The rest are prefetched whole, for
    the decode. The entry is then never read whole just to be shown."""
    texts: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for field, text in fields.items():
        found = await codec.io.head_of(text, PREVIEW_THRESHOLD_BYTES, PREVIEW_CHARS)
        if found is None:
            await codec.prefetch(text)
        else:
            texts[field], sizes[field] = found
    return texts, sizes


def _safely(what: str, workflow_id: str, decode: Any, raw: str | None, preview: Any) -> Any:
    if raw is None:
        return None
    if preview is not None:
        return preview  # a face asked for previews: too large to decode for showing
    try:
        return decode()
    except Exception as error:
        logger.warning(
            "cannot decode the %s of workflow %s (%s): returning it raw", what, workflow_id, error
        )
        return raw


def workflow_status(
    codec: Codec,
    row: WorkflowRow,
    *,
    previews: bool = False,
    clipped: Mapping[str, int] = NOT_CLIPPED,
) -> WorkflowStatus:
    """``row`` as a :class:`WorkflowStatus`, its payloads decoded; with ``previews`` (the
    CLI, the dashboard) a payload over the preview threshold is a
    :class:`~dbos_trio._core.previews.PayloadPreview` instead. ``clipped`` (from a bounded
    read, :class:`~dbos_trio._sysdb.bounded.Bounded`) names the payload fields that hold
    only their start, with their sizes: those are previews whatever ``previews`` says."""
    fmt = row.serialization

    def shown(field: str, raw: str | None) -> Any:
        if field in clipped or previews:
            return _preview(codec, raw, fmt, clipped.get(field))
        return None

    def decode_inputs() -> dict[str, Any]:
        args, kwargs = codec.decode_inputs(row.inputs, fmt)
        return {"args": args, "kwargs": kwargs}

    roles = None
    if row.authenticated_roles:
        try:
            roles = list(json.loads(row.authenticated_roles))
        except ValueError:
            roles = None
    return WorkflowStatus(
        workflow_id=row.workflow_id,
        status=row.status,
        name=row.name,
        class_name=row.class_name or None,
        config_name=row.config_name or None,
        authenticated_user=row.authenticated_user,
        assumed_role=row.assumed_role,
        authenticated_roles=roles,
        input=_safely(
            "input", row.workflow_id, decode_inputs, row.inputs, shown("inputs", row.inputs)
        ),
        output=_safely(
            "output",
            row.workflow_id,
            lambda: codec.decode(row.output, fmt),
            row.output,
            shown("output", row.output),
        ),
        error=_safely(
            "error",
            row.workflow_id,
            lambda: codec.decode_error(row.error or "", fmt),
            row.error,
            shown("error", row.error),
        ),
        created_at=row.created_at,
        updated_at=row.updated_at,
        queue_name=row.queue_name,
        executor_id=row.executor_id,
        app_version=row.application_version,
        app_id=row.application_id,
        workflow_timeout_ms=row.workflow_timeout_ms,
        workflow_deadline_epoch_ms=row.workflow_deadline_epoch_ms,
        deduplication_id=row.deduplication_id,
        priority=row.priority,
        queue_partition_key=row.queue_partition_key,
        forked_from=row.forked_from,
        was_forked_from=bool(row.was_forked_from),
        parent_workflow_id=row.parent_workflow_id,
        dequeued_at=row.started_at_epoch_ms,
        delay_until_epoch_ms=row.delay_until_epoch_ms,
        completed_at=row.completed_at,
        application_name=row.application_name,
        recovery_attempts=row.recovery_attempts,
        serialization=row.serialization,
        attributes=_attributes(getattr(row, "attributes", None)),
        schedule_name=getattr(row, "schedule_name", None),
    )


def _attributes(raw: Any) -> dict[str, Any] | None:
    """``attributes`` as a dict: JSONB comes decoded, TEXT (SQLite) as JSON."""
    if raw is None or isinstance(raw, dict):
        return raw
    try:
        decoded = json.loads(raw)
    except (TypeError, ValueError):
        return None
    return decoded if isinstance(decoded, dict) else None


def step_info(
    codec: Codec,
    workflow_id: str,
    step: RecordedStep,
    *,
    load_output: bool = True,
    previews: bool = False,
    clipped: Mapping[str, int] = NOT_CLIPPED,
) -> StepInfo:
    """``step`` as a :class:`StepInfo` (``previews`` and ``clipped`` as in
    :func:`workflow_status`)."""
    fmt = step.serialization
    output = error = None

    def shown(field: str, raw: str | None) -> Any:
        if field in clipped or previews:
            return _preview(codec, raw, fmt, clipped.get(field))
        return None

    if load_output:
        output = _safely(
            "step output",
            workflow_id,
            lambda: codec.decode(step.output, fmt),
            step.output,
            shown("output", step.output),
        )
        error = _safely(
            "step error",
            workflow_id,
            lambda: codec.decode_error(step.error or "", fmt),
            step.error,
            shown("error", step.error),
        )
    return StepInfo(
        function_id=step.function_id,
        function_name=step.function_name,
        output=output,
        error=error,
        child_workflow_id=step.child_workflow_id,
        started_at_epoch_ms=step.started_at_ms,
        completed_at_epoch_ms=step.completed_at_ms,
    )
