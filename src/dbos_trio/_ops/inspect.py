"""The workflow reads every face shares: a status, an existence check, listings, steps.

Each function validates its arguments and asks the :class:`~.reach.Reach` for its runtime
at the call, then returns the coroutine that reads: a bad value or a closed face raises
before anything is awaited. Called from a ``DBOS`` workflow body a read is checkpointed
under the cross-SDK step name (``DBOS.getStatus``, ``DBOS.listWorkflows``, ...), so a replay
returns the answer the first execution saw; a client's reads are never recorded.

Cancellation raises ``trio.Cancelled`` and records nothing (a replay asks again); a
database failure raises :class:`~dbos_trio.SystemDatabaseError` after the retries.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import Any

import attrs

from dbos_trio._core import validate
from dbos_trio._core.filters import normalize_filters, queued
from dbos_trio._engine.state import Runtime
from dbos_trio._engine.workflows.status import (
    PREVIEW_BOUND,
    StepInfo,
    WorkflowStatus,
    step_info,
    stored_heads,
    workflow_status,
)
from dbos_trio._ops.reach import Reach
from dbos_trio._sysdb.records import WorkflowFilters
from dbos_trio.errors import DBOSNonExistentWorkflowError


def get_workflow_status(
    reach: Reach, workflow_id: str, *, previews: bool = False
) -> Coroutine[Any, Any, WorkflowStatus | None]:
    """The workflow's status row, decoded (an undecodable payload is kept as its stored
    string); None if there is no such workflow. Step name ``DBOS.getStatus``.

    ``previews`` (for the faces that show values: the CLI, the dashboard): a payload over
    :data:`~dbos_trio._core.previews.PREVIEW_THRESHOLD_BYTES` is not decoded but given as
    a :class:`~dbos_trio._core.previews.PayloadPreview` (its size and first characters),
    and is not even read whole: the row is read bounded (:mod:`dbos_trio._sysdb.bounded`),
    so the database returns only the preview's characters of it."""
    validate.text(workflow_id, "workflow_id")
    validate.boolean(previews, "previews")
    runtime = reach.runtime("get_workflow_status")

    async def read() -> WorkflowStatus | None:
        codec = runtime.codec
        if not previews:
            row = await runtime.sysdb.get_workflow(workflow_id)
            if row is None:
                return None
            await codec.prefetch(row.inputs, row.output)  # store entries, off the Trio thread
            return workflow_status(codec, row)
        bounded = await runtime.sysdb.get_workflow_bounded(workflow_id, PREVIEW_BOUND)
        if bounded is None:
            return None
        row = bounded.record
        heads, sizes = await stored_heads(codec, {"inputs": row.inputs, "output": row.output})
        row = attrs.evolve(
            row, inputs=heads.get("inputs", row.inputs), output=heads.get("output", row.output)
        )
        clipped = {**bounded.clipped, **sizes}
        return workflow_status(codec, row, previews=True, clipped=clipped)

    return reach.checkpoint("DBOS.getStatus", read)


def retrieve_workflow(reach: Reach, workflow_id: str) -> Coroutine[Any, Any, str]:
    """The id, once one read found the workflow (never checkpointed: it only looks);
    :class:`~dbos_trio.DBOSNonExistentWorkflowError` if no workflow has it."""
    validate.text(workflow_id, "workflow_id")
    runtime = reach.runtime("retrieve_workflow")

    async def exists() -> str:
        if await runtime.sysdb.get_outcome(workflow_id) is None:
            raise DBOSNonExistentWorkflowError("target", workflow_id)
        return workflow_id

    return exists()


def list_workflow_steps(
    reach: Reach,
    workflow_id: str,
    *,
    load_output: bool = True,
    limit: int | None = None,
    offset: int | None = None,
    previews: bool = False,
) -> Coroutine[Any, Any, list[StepInfo]]:
    """The workflow's recorded steps in step-id order (``limit``/``offset`` page them;
    ``load_output=False`` leaves outputs and errors undecoded, as None; ``previews`` as in
    :func:`get_workflow_status`, the steps read bounded). Step name
    ``DBOS.listWorkflowSteps``."""
    validate.text(workflow_id, "workflow_id")
    validate.boolean(load_output, "load_output")
    validate.optional_integer(limit, "limit", low=0)
    validate.optional_integer(offset, "offset", low=0)
    validate.boolean(previews, "previews")
    runtime = reach.runtime("list_workflow_steps")

    async def read() -> list[StepInfo]:
        codec = runtime.codec
        infos: list[StepInfo] = []
        if not previews:
            steps = await runtime.sysdb.list_steps(workflow_id, limit=limit, offset=offset)
            for step in steps:
                if load_output:  # one at a time: the prefetch cache holds this one
                    await codec.prefetch(step.output)
                infos.append(step_info(codec, workflow_id, step, load_output=load_output))
            return infos
        bounded = await runtime.sysdb.list_steps_bounded(
            workflow_id, PREVIEW_BOUND, limit=limit, offset=offset
        )
        for b in bounded:
            step, clipped = b.record, dict(b.clipped)
            if load_output:
                heads, sizes = await stored_heads(codec, {"output": step.output})
                step = attrs.evolve(step, output=heads.get("output", step.output))
                clipped.update(sizes)
            info = step_info(
                codec, workflow_id, step, load_output=load_output, previews=True, clipped=clipped
            )
            infos.append(info)
        return infos

    return reach.checkpoint("DBOS.listWorkflowSteps", read)


def list_workflows(
    reach: Reach, filters: Mapping[str, Any], *, own_application: bool = False
) -> Coroutine[Any, Any, list[WorkflowStatus]]:
    """Workflows matching every filter (:class:`~dbos_trio._core.filters.ListFilters`);
    a bad value raises :class:`~dbos_trio.DBOSInvalidArgumentError` (an unknown filter
    ``DBOSArgumentTypeError``) at the call. Step name ``DBOS.listWorkflows``.

    Scope (see :func:`scoped`): ``own_application`` (a launched ``DBOS``) always lists
    the runtime's application and unclaimed rows; otherwise the official client's rule.
    """
    return _list(reach, "list_workflows", "DBOS.listWorkflows", filters, own_application)


def list_queued_workflows(
    reach: Reach, filters: Mapping[str, Any], *, own_application: bool = False
) -> Coroutine[Any, Any, list[WorkflowStatus]]:
    """:func:`list_workflows` of queued rows, DELAYED, ENQUEUED or PENDING unless
    ``status`` is given. Step name ``DBOS.listQueuedWorkflows``."""
    return _list(
        reach, "list_queued_workflows", "DBOS.listQueuedWorkflows", queued(filters), own_application
    )


def scoped(
    runtime: Runtime, filters: Mapping[str, Any], *, own_application: bool
) -> WorkflowFilters:
    """The listing record for ``filters``, validated, with its application scope.

    A launched ``DBOS`` (``own_application``) lists its application's rows and unclaimed
    ones, whatever the filters say (``application_name`` narrows further). A client is
    scoped like the official client: by ``application_name`` if given (one name: that
    application and unclaimed rows), else by its own application unless it looks up
    ``workflow_ids`` (a nameless client sees every row).
    """
    if own_application:
        return WorkflowFilters(scope_application=runtime.app_name, **normalize_filters(filters))
    rest = dict(filters)
    application = rest.pop("application_name", None)
    normalized = normalize_filters(rest)
    if application is not None:
        names = normalize_filters({"application_name": application})["application_names"]
        if len(names) == 1:
            normalized["scope_application"] = names[0]
        elif names:
            normalized["application_names"] = names
    elif runtime.app_name is not None and "workflow_ids" not in normalized:
        normalized["scope_application"] = runtime.app_name
    return WorkflowFilters(**normalized)


def _list(
    reach: Reach,
    operation: str,
    step_name: str,
    filters: Mapping[str, Any],
    own_application: bool,
) -> Coroutine[Any, Any, list[WorkflowStatus]]:
    # Validated before the runtime is asked for, as every operation's arguments are.
    normalize_filters(filters)
    runtime = reach.runtime(operation)
    query = scoped(runtime, filters, own_application=own_application)

    async def read() -> list[WorkflowStatus]:
        rows = await runtime.sysdb.list_workflows(query)
        statuses: list[WorkflowStatus] = []
        for row in rows:  # one at a time: the prefetch cache holds this row's entries
            await runtime.codec.prefetch(row.inputs, row.output)
            statuses.append(workflow_status(runtime.codec, row))
        return statuses

    return reach.checkpoint(step_name, read)
