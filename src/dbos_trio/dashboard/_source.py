"""What the dashboard reads and does, over a :class:`~dbos_trio._engine.state.Runtime`.

A ``Runtime`` is what a :class:`~dbos_trio.Client` and a launched executor both are, so
the CLI's dashboard and ``DBOS.serve_dashboard`` run the same code: actions are the
engine's own management calls (the ones ``Client.cancel_workflow`` and friends make),
reads are the system database's listings.

Invariant: payloads are decoded by this module's own :class:`Codec`, whose
``allow_pickle`` is the operator's choice for the dashboard, not the executor's: an
executor that trusts its database to unpickle still shows a pickled payload only as
stored unless the dashboard was started with ``allow_pickle``. A payload that cannot be
decoded is shown as stored, with the reason, and never fails the page.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from dbos_trio._core.filters import normalize_filters
from dbos_trio._core.statuses import ALL_STATUSES
from dbos_trio._engine.admin import fork, management
from dbos_trio._engine.schedules import definitions as schedules
from dbos_trio._engine.schedules.definitions import WorkflowSchedule
from dbos_trio._engine.state import Runtime
from dbos_trio._serialization import PICKLE, Codec
from dbos_trio._sysdb.records import (
    ApplicationVersion,
    EventRecord,
    ExecutorSummary,
    MessageRecord,
    QueueDepth,
    RecordedStep,
    ScheduleFilters,
    StreamEntry,
    WorkflowFilters,
    WorkflowRow,
)

MESSAGE_LIMIT = 200
STREAM_LIMIT = 200
CHILD_LIMIT = 200


@attrs.frozen
class Shown:
    """A payload as the page shows it: ``text``, and whether it was decoded."""

    text: str
    decoded: bool
    note: str = ""


@attrs.frozen
class WorkflowPage:
    row: WorkflowRow
    inputs: Shown | None
    output: Shown | None
    error: Shown | None
    steps: list[tuple[RecordedStep, Shown | None, Shown | None]]
    children: list[WorkflowRow]
    events: list[tuple[EventRecord, Shown]]
    messages: list[tuple[MessageRecord, Shown]]
    streams: list[tuple[StreamEntry, Shown]]


def _text(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


class Source:
    """The dashboard's reads and actions. Every method may raise what the system database
    raises (unreachable, cancelled): the app turns that into an error page."""

    def __init__(self, runtime: Runtime, *, allow_pickle: bool) -> None:
        self.runtime = runtime
        self.allow_pickle = allow_pickle
        self.codec = Codec(runtime.codec.configured, allow_pickle=allow_pickle)

    # --- decoding ------------------------------------------------------------------

    def show(self, raw: str | None, fmt: str | None, kind: str = "value") -> Shown | None:
        if raw is None:
            return None
        if fmt == PICKLE and not self.allow_pickle:
            return Shown(raw, False, "pickled: shown as stored (start with --allow-pickle)")
        try:
            if kind == "inputs":
                args, kwargs = self.codec.decode_inputs(raw, fmt)
                return Shown(_text({"args": list(args), "kwargs": kwargs}), True)
            if kind == "error":
                error = self.codec.decode_error(raw, fmt)
                return Shown(f"{type(error).__name__}: {error}", True)
            return Shown(_text(self.codec.decode(raw, fmt)), True)
        except Exception as error:
            return Shown(raw, False, f"not decoded: {error}")

    # --- reads ---------------------------------------------------------------------

    async def list_workflows(self, filters: dict[str, Any]) -> list[WorkflowRow]:
        """Rows matching ``dbos`` 3.4 ``list_workflows`` keyword filters, of every
        application (an operator sees the whole database)."""
        query = WorkflowFilters(**normalize_filters(filters))
        return await self.runtime.sysdb.list_workflows(query)

    async def get_workflow(self, workflow_id: str) -> WorkflowRow | None:
        return await self.runtime.sysdb.get_workflow(workflow_id)

    async def workflow_page(self, workflow_id: str) -> WorkflowPage | None:
        sysdb = self.runtime.sysdb
        row = await sysdb.get_workflow(workflow_id)
        if row is None:
            return None
        fmt = row.serialization
        steps = [
            (
                step,
                self.show(step.output, step.serialization),
                None if step.error is None else self.show(step.error, step.serialization, "error"),
            )
            for step in await sysdb.list_steps(workflow_id)
        ]
        children = await self.list_workflows(
            {"parent_workflow_id": workflow_id, "limit": CHILD_LIMIT}
        )
        events = [
            (e, self.show(e.value, e.serialization) or Shown("", True))
            for e in await sysdb.list_events(workflow_id)
        ]
        messages = [
            (m, self.show(m.message, m.serialization) or Shown("", True))
            for m in await sysdb.list_messages(workflow_id, MESSAGE_LIMIT)
        ]
        streams = [
            (s, self.show(s.value, s.serialization) or Shown("", True))
            for s in await sysdb.list_stream_entries(workflow_id, STREAM_LIMIT)
        ]
        return WorkflowPage(
            row=row,
            inputs=self.show(row.inputs, fmt, "inputs"),
            output=self.show(row.output, fmt),
            error=None if row.error is None else self.show(row.error, fmt, "error"),
            steps=steps,
            children=children,
            events=events,
            messages=messages,
            streams=streams,
        )

    async def step_ids(self, workflow_id: str) -> list[int]:
        return [step.function_id for step in await self.runtime.sysdb.list_steps(workflow_id)]

    async def queues(self) -> tuple[list[Any], list[QueueDepth]]:
        sysdb = self.runtime.sysdb
        return await sysdb.list_queues(None), await sysdb.queue_depths()

    async def schedules(self) -> list[WorkflowSchedule]:
        rows = await self.runtime.sysdb.list_schedules(ScheduleFilters())
        return [schedules.view(self.codec, row) for row in rows]

    async def executors(self) -> tuple[list[ExecutorSummary], list[ApplicationVersion]]:
        sysdb = self.runtime.sysdb
        return await sysdb.list_executor_summaries(), await sysdb.list_application_versions(None)

    # --- actions (the engine's management calls, as Client makes them) ----------------

    async def cancel(self, workflow_id: str) -> bool:
        """Whether this call cancelled it (False: it had finished already)."""
        return bool(await management.cancel_workflows(self.runtime, [workflow_id]))

    async def resume(self, workflow_id: str) -> bool:
        """Whether it was re-enqueued (False: it had succeeded or failed)."""
        return bool(await management.resume_workflows(self.runtime, [workflow_id]))

    async def fork(self, workflow_id: str, start_step: int) -> str:
        return await fork.fork_workflow(self.runtime, workflow_id, start_step)

    async def delete(self, workflow_id: str, *, delete_children: bool) -> None:
        await management.delete_workflows(
            self.runtime, [workflow_id], delete_children=delete_children
        )


STATUSES = sorted(ALL_STATUSES)
