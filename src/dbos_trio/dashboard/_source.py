"""What the dashboard reads and does, over a :class:`~dbos_trio._engine.state.Runtime`.

A ``Runtime`` is what a :class:`~dbos_trio.Client` and a launched executor both are, so
the CLI's dashboard and ``DBOS.serve_dashboard`` run the same code: actions are the shared
operations of :mod:`dbos_trio._ops.manage` (the ones ``Client.cancel_workflow`` and
friends make), reached through :class:`RuntimeReach` and never checkpointed; reads are
the system database's listings.

Invariant: payloads are decoded by this module's own :class:`Codec`, whose
``allow_pickle`` is the operator's choice for the dashboard, not the executor's: an
executor that trusts its database to unpickle still shows a pickled payload only as
stored unless the dashboard was started with ``allow_pickle``. A payload that cannot be
decoded is shown as stored, with the reason, and never fails the page. Rows are read
bounded (:mod:`dbos_trio._sysdb.bounded`): a payload over the preview threshold comes from
the database as its first characters and its size only, whoever wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import attrs

from dbos_trio._config import DEFAULT_HEARTBEAT_INTERVAL
from dbos_trio._core.filters import normalize_filters
from dbos_trio._core.human import moment_text, relative_text
from dbos_trio._core.pickled import read_error
from dbos_trio._core.previews import PREVIEW_CHARS, PREVIEW_THRESHOLD_BYTES, preview_of
from dbos_trio._core.statuses import ALL_STATUSES, CANCELLABLE_STATUSES
from dbos_trio._engine.recovery.adoption import window_ms
from dbos_trio._engine.recovery.doctor import Finding
from dbos_trio._engine.schedules import definitions as schedules
from dbos_trio._engine.schedules.definitions import WorkflowSchedule
from dbos_trio._engine.state import Executor, Runtime
from dbos_trio._engine.workflows.status import PREVIEW_BOUND
from dbos_trio._ops import activity, manage
from dbos_trio._ops import queues as queue_ops
from dbos_trio._ops import schedules as schedule_ops
from dbos_trio._ops.activity import Overview
from dbos_trio._ops.reach import unrecorded
from dbos_trio._serialization import PICKLE, Codec
from dbos_trio._sysdb.bounded import Bounded
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

SLEEP_STEP = "DBOS.sleep"  # its output is the wake-up time, in epoch seconds
FAILED = ("ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
MESSAGE_LIMIT = 200
# Steps and events shown on a workflow's page (one with 100,000 events was a 27 MB page).
STEP_LIMIT = 500
EVENT_LIMIT = 200
STREAM_LIMIT = 200
CHILD_LIMIT = 200

T = TypeVar("T")


class RuntimeReach:
    """The dashboard's :class:`~dbos_trio._ops.reach.Reach`: the runtime it was given
    (a client's, or a launched executor's), open for as long as the dashboard serves, and
    nothing checkpointed (an operator's click is no workflow's step)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def runtime(self, operation: str) -> Runtime:
        """The runtime, whatever the operation."""
        del operation
        return self._runtime

    def checkpoint(
        self, step_name: str, operation: Callable[[], Awaitable[T]]
    ) -> Coroutine[Any, Any, T]:
        """``operation``, run as it is."""
        return unrecorded(step_name, operation)


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
    # More than shown exist (the page shows the first STEP_LIMIT / EVENT_LIMIT).
    more_steps: bool = False
    more_events: bool = False


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
        self.reach = RuntimeReach(runtime)
        self.allow_pickle = allow_pickle
        self.codec = Codec(
            runtime.codec.configured,
            allow_pickle=allow_pickle,
            payload_store=runtime.codec.payload_store,
        )

    # --- decoding ------------------------------------------------------------------

    def show(
        self, raw: str | None, fmt: str | None, kind: str = "value", clipped: int | None = None
    ) -> Shown | None:
        """``raw`` as the page shows it; ``clipped``: a bounded read returned only its start,
        and this is the whole value's size in bytes."""
        if raw is None:
            return None
        if clipped is not None:
            return _start_of(raw[:PREVIEW_CHARS], clipped, fmt)
        ref = self.codec.stored_reference(raw)
        if ref is not None:  # no store to read it from (dbos-trio dashboard --payload-store)
            return Shown(str(ref), False, "start the dashboard with --payload-store to show it")
        try:
            raw = self.codec.resolve(raw, fmt, kind)
        except Exception as unresolved:  # missing or corrupt entry: names hash and store
            return Shown(raw, False, f"not decoded: {unresolved}")
        preview = preview_of(raw, fmt)
        if preview is not None:  # too large to decode for a page (dbos_trio._core.previews)
            return _start_of(preview.head, preview.size, fmt)
        if kind == "error" and fmt == PICKLE:
            # Read from the pickle's opcodes, never unpickled: the type, message, attempts
            # and traceback, whatever the setting and whoever's the class.
            reading = read_error(raw)
            if reading is not None:
                return Shown(reading.text(), True)
        if fmt == PICKLE and not self.allow_pickle:
            return Shown(raw, False, "pickled: shown as stored (start with --allow-pickle)")
        try:
            if kind == "inputs":
                args, kwargs = self.codec.decode_inputs(raw, fmt)
                return Shown(_text({"args": list(args), "kwargs": kwargs}), True)
            if kind == "error":
                error = self.codec.decode_error(raw, fmt)
                reading = read_error(error)
                assert reading is not None
                return Shown(reading.text(), True)
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
        """The workflow's row without its payloads (None in them: for its status and
        names; the page reads them bounded, :meth:`workflow_page`)."""
        rows = await self.runtime.sysdb.list_workflows(
            WorkflowFilters(workflow_ids=(workflow_id,), load_input=False, load_output=False)
        )
        return rows[0] if rows else None

    async def workflow_page(self, workflow_id: str) -> WorkflowPage | None:
        sysdb = self.runtime.sysdb
        bounded = await sysdb.get_workflow_bounded(workflow_id, PREVIEW_BOUND)
        if bounded is None:
            return None
        row, clipped = bounded.record, bounded.clipped
        fmt = row.serialization
        steps = []
        for b in await sysdb.list_steps_bounded(workflow_id, PREVIEW_BOUND, limit=STEP_LIMIT + 1):
            steps.append((b.record, await self._step_output(b), self._step_error(b)))
        children = await self.list_workflows(
            {"parent_workflow_id": workflow_id, "limit": CHILD_LIMIT}
        )
        events = [
            (b.record, await self._shown_value(b, b.record.value, b.record.serialization, "value"))
            for b in await sysdb.list_events_bounded(workflow_id, EVENT_LIMIT + 1, PREVIEW_BOUND)
        ]
        messages = [
            (
                b.record,
                await self._shown_value(b, b.record.message, b.record.serialization, "message"),
            )
            for b in await sysdb.list_messages_bounded(workflow_id, MESSAGE_LIMIT, PREVIEW_BOUND)
        ]
        streams = [
            (b.record, await self._shown_value(b, b.record.value, b.record.serialization, "value"))
            for b in await sysdb.list_stream_entries_bounded(
                workflow_id, STREAM_LIMIT, PREVIEW_BOUND
            )
        ]
        return WorkflowPage(
            row=row,
            inputs=await self._shown(row.inputs, fmt, "inputs", clipped.get("inputs")),
            output=await self._shown(row.output, fmt, "value", clipped.get("output")),
            error=(
                None
                if row.error is None
                else self.show(row.error, fmt, "error", clipped.get("error"))
            ),
            steps=steps[:STEP_LIMIT],
            children=children,
            events=events[:EVENT_LIMIT],
            more_steps=len(steps) > STEP_LIMIT,
            more_events=len(events) > EVENT_LIMIT,
            messages=messages,
            streams=streams,
        )

    async def _shown(
        self, raw: str | None, fmt: str | None, kind: str, clipped: int | None
    ) -> Shown | None:
        """:meth:`show`, a payload store entry read first, in a worker thread: only its
        start when it is over the preview threshold and the store can read a part of one,
        else whole (prefetched for the decode)."""
        found = await self.codec.io.head_of(raw, PREVIEW_THRESHOLD_BYTES, PREVIEW_CHARS)
        if found is not None:
            raw, clipped = found
        else:
            await self.codec.prefetch(raw)
        return self.show(raw, fmt, kind, clipped)

    async def _shown_value(
        self, bounded: Bounded[Any], raw: str, fmt: str | None, field: str
    ) -> Shown:
        shown = await self._shown(raw, fmt, "value", bounded.clipped.get(field))
        return shown or Shown("", True)

    def _step_error(self, bounded: Bounded[RecordedStep]) -> Shown | None:
        step = bounded.record
        if step.error is None:
            return None
        return self.show(step.error, step.serialization, "error", bounded.clipped.get("error"))

    async def _step_output(self, bounded: Bounded[RecordedStep]) -> Shown | None:
        step = bounded.record
        clipped = bounded.clipped.get("output")
        shown = await self._shown(step.output, step.serialization, "value", clipped)
        if step.function_name != SLEEP_STEP or shown is None or not shown.decoded:
            return shown
        try:
            wake_ms = float(shown.text) * 1000
        except ValueError:
            return shown
        when = moment_text(wake_ms)
        if not when or when.startswith("invalid"):
            return shown
        now = self.runtime.clock.now_ms()
        return Shown(f"wakes up at {when} ({relative_text(wake_ms, now)})", True)

    async def failures(self, rows: list[WorkflowRow]) -> dict[str, str]:
        """The one-line error (type: message) of each failed row of ``rows``, by id, read
        without unpickling; one query for the failed rows only (their outputs are empty,
        so no large payload is read for a listing)."""
        failed = tuple(r.workflow_id for r in rows if r.status in FAILED)
        if not failed:
            return {}
        loaded = await self.runtime.sysdb.list_workflows_bounded(
            WorkflowFilters(workflow_ids=failed, load_input=False, load_output=True),
            PREVIEW_BOUND,
        )
        summaries = {}
        for bounded in loaded:
            row = bounded.record
            shown = self.show(row.error, row.serialization, "error", bounded.clipped.get("error"))
            if shown is not None and shown.decoded and shown.text:
                summaries[row.workflow_id] = shown.text.splitlines()[0]  # its summary line
            elif shown is not None:
                summaries[row.workflow_id] = "(not readable here: open the workflow)"
        return summaries

    def now_ms(self) -> int:
        return self.runtime.clock.now_ms()

    async def overview(self, minutes: int) -> Overview:
        return await activity.overview(self.reach, minutes=minutes)

    def heartbeat_interval(self) -> float:
        """The executors' heartbeat interval: a launched executor's own, else the default."""
        runtime = self.runtime
        if isinstance(runtime, Executor):
            return runtime.config.heartbeat_interval
        return DEFAULT_HEARTBEAT_INTERVAL

    def live_window_ms(self) -> int:
        """How recent a stamp shows a live executor (three heartbeat intervals)."""
        return window_ms(self.heartbeat_interval())

    async def health(self) -> list[Finding]:
        interval = self.heartbeat_interval()
        return await activity.health(self.reach, heartbeat_interval=interval, all_applications=True)

    async def step_ids(self, workflow_id: str) -> list[int]:
        steps = await self.runtime.sysdb.list_steps(workflow_id, limit=STEP_LIMIT)
        return [step.function_id for step in steps]

    async def queues(self) -> tuple[list[Any], list[QueueDepth], dict[str, int]]:
        """Every queue's configuration, depths, and its oldest ENQUEUED row's creation."""
        sysdb = self.runtime.sysdb
        activity_rows = await sysdb.queue_activity(self.now_ms())
        oldest = {
            row.queue_name: row.stamp_ms
            for row in activity_rows
            if row.kind == "ENQUEUED" and row.stamp_ms is not None
        }
        return await sysdb.list_queues(None), await sysdb.queue_depths(), oldest

    async def schedules(self) -> list[WorkflowSchedule]:
        rows = await self.runtime.sysdb.list_schedules(ScheduleFilters())
        return [schedules.view(self.codec, row) for row in rows]

    async def executors(self) -> tuple[list[ExecutorSummary], list[ApplicationVersion]]:
        sysdb = self.runtime.sysdb
        return await sysdb.list_executor_summaries(), await sysdb.list_application_versions(None)

    # --- actions (the shared operations, as Client makes them) -------------------------

    async def cancel(self, workflow_id: str) -> bool:
        """Whether this call cancelled it (False: it had finished already, or it is gone)."""
        cancellable = await self._cancellable(workflow_id)
        await manage.cancel_workflow(self.reach, workflow_id)
        return cancellable

    async def resume(self, workflow_id: str) -> bool:
        """Whether it was re-enqueued (False: it had succeeded or failed)."""
        resumable = await self._cancellable(workflow_id)
        await manage.resume_workflow(self.reach, workflow_id)
        return resumable

    async def retry(self, workflow_id: str) -> str:
        """The new workflow's id (see :func:`dbos_trio._ops.manage.retry_workflow`)."""
        return await manage.retry_workflow(self.reach, workflow_id)

    async def pause(self, workflow_id: str) -> bool:
        """Whether this call paused it (False: paused already); a finished workflow raises
        (see :func:`dbos_trio._ops.manage.pause_workflow`)."""
        return await manage.pause_workflow(self.reach, workflow_id)

    async def unpause(self, workflow_id: str) -> bool:
        """Whether this call unpaused it (False: it was not paused)."""
        return await manage.unpause_workflow(self.reach, workflow_id)

    async def pause_queue(self, name: str) -> bool:
        """Whether this call paused the queue (False: paused already); a queue with no row
        raises (see :func:`dbos_trio._ops.queues.pause_queue`)."""
        return await queue_ops.pause_queue(self.reach, name)

    async def unpause_queue(self, name: str) -> bool:
        """Whether this call unpaused the queue (False: it was not paused)."""
        return await queue_ops.unpause_queue(self.reach, name)

    async def fork(self, workflow_id: str, start_step: int) -> str:
        return await manage.fork_workflow(self.reach, workflow_id, start_step)

    async def delete(self, workflow_id: str, *, delete_children: bool) -> None:
        await manage.delete_workflow(self.reach, workflow_id, delete_children=delete_children)

    async def pause_schedule(self, name: str) -> None:
        await schedule_ops.pause_schedule(self.reach, name)

    async def resume_schedule(self, name: str) -> None:
        await schedule_ops.resume_schedule(self.reach, name)

    async def trigger_schedule(self, name: str) -> str:
        """The id of the run enqueued now."""
        return await schedule_ops.trigger_schedule(self.reach, name)

    async def get_schedule(self, name: str) -> WorkflowSchedule | None:
        return await schedule_ops.get_schedule(self.reach, name)

    async def _cancellable(self, workflow_id: str) -> bool:
        # What cancel and resume act on (everything but an outcome), read just before: the
        # page reports what the click did, and a workflow finishing in between is a race
        # the operator sees on the next page anyway.
        row = await self.get_workflow(workflow_id)
        return row is not None and row.status in CANCELLABLE_STATUSES


STATUSES = sorted(ALL_STATUSES)


def _start_of(head: str, size: int, fmt: str | None) -> Shown:
    """A payload too large to decode for a page (dbos_trio._core.previews): its start."""
    return Shown(head + "...", False, f"{size:,} bytes stored as {fmt}: only its start is shown")
