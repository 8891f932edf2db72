"""Checking an upgrade: which recorded workflows to replay, and replaying them.

``load_histories`` reads the selected workflows' rows and checkpoints (read-only, through
any face's runtime: a client's, the CLI's); ``check`` replays them against an application's
registered code in the sandbox (:mod:`dbos_trio._engine.runtime.replay`) and reports.

Invariants, and why:

* **The default selection is the work a deploy resumes**: every PENDING, ENQUEUED and
  DELAYED workflow (of the application and unclaimed ones), plus the ``finished`` most
  recent SUCCESS/ERROR ones on request; names, queues, versions and a creation time
  narrow it. A bad value raises before anything is read.
* **Reading and replaying are apart**: histories are copied first, then replayed with no
  database open, so a slow replay holds no connection and a bundle replays the same way.
* **Replays run off the caller's Trio run** (in a worker thread, each its own
  ``trio.run`` under a ``MockClock``), so ``check`` can be awaited from a Trio program or
  test and time in it stays virtual.

Cancellation: ``load_histories`` only reads; a cancelled ``check`` stops once the replay in
progress ends (replays write nothing), and raises ``trio.Cancelled``.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from functools import partial
from typing import Any

import attrs
import trio

from dbos_trio._clock import monotonic
from dbos_trio._core import validate
from dbos_trio._core.replay import IN_FLIGHT, CheckReport
from dbos_trio._core.statuses import ERROR, SUCCESS
from dbos_trio._engine.runtime.replay.history import RecordedHistory
from dbos_trio._engine.runtime.replay.run import ReplayApp, replay_all
from dbos_trio._engine.state import Runtime
from dbos_trio._ops.reach import Reach
from dbos_trio._sysdb.records import WorkflowFilters, WorkflowRow

__all__ = ["CheckSelection", "RecordedHistory", "ReplayApp", "check", "load_histories"]


@attrs.frozen(kw_only=True)
class CheckSelection:
    """Which recorded workflows a check replays (every set field narrows)."""

    workflow_ids: tuple[str, ...] | None = None  # exactly these (any status)
    names: tuple[str, ...] | None = None
    queues: tuple[str, ...] | None = None
    versions: tuple[str, ...] | None = None
    created_after_ms: int | None = None
    finished: int = 0  # also the N most recent SUCCESS/ERROR ones
    application_name: str | None = None  # its rows and unclaimed ones (None: every one)

    def validated(self) -> CheckSelection:
        validate.integer(self.finished, "check finished", low=0)
        return self


def load_histories(
    reach: Reach, selection: CheckSelection
) -> Coroutine[Any, Any, list[RecordedHistory]]:
    """The selected workflows' rows and checkpoints, in-flight ones first, oldest first.

    Raises :class:`~dbos_trio.SystemDatabaseError` if the database fails (after retries).
    """
    selection.validated()
    runtime = reach.runtime("check")
    return _load(runtime, selection)


async def _load(runtime: Runtime, selection: CheckSelection) -> list[RecordedHistory]:
    base = WorkflowFilters(
        names=selection.names,
        queue_names=selection.queues,
        app_versions=selection.versions,
        created_after_ms=selection.created_after_ms,
        scope_application=selection.application_name,
    )
    rows: list[WorkflowRow]
    if selection.workflow_ids is not None:
        rows = await runtime.sysdb.list_workflows(
            attrs.evolve(base, workflow_ids=selection.workflow_ids)
        )
    else:
        rows = await runtime.sysdb.list_workflows(
            attrs.evolve(base, statuses=tuple(sorted(IN_FLIGHT)))
        )
        if selection.finished:
            rows += await runtime.sysdb.list_workflows(
                attrs.evolve(
                    base,
                    statuses=(SUCCESS, ERROR),
                    sort_desc=True,
                    limit=selection.finished,
                )
            )
    histories = []
    for row in rows:
        steps = await runtime.sysdb.list_steps(row.workflow_id)
        histories.append(RecordedHistory(row=row, steps=tuple(steps)))
    return histories


async def check(app: ReplayApp, histories: Sequence[RecordedHistory]) -> CheckReport:
    """Replay ``histories`` against ``app``'s registered code (not launched); the report.

    A launched application raises :class:`~dbos_trio.DBOSException` before any replay.
    Every problem of one workflow (divergence, undecodable inputs, an unregistered name)
    is its verdict in the report, never raised.
    """
    started = monotonic()
    replay = partial(replay_all, app, list(histories), before_each=trio.from_thread.check_cancelled)
    results = await trio.to_thread.run_sync(replay)
    return CheckReport(results=tuple(results), seconds=monotonic() - started)
