"""Crash a workflow at each of its checkpoints in turn, recover it, and check an invariant."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal

import attrs

from dbos_trio._config import Config
from dbos_trio._engine.workflows.options import SetWorkflowID
from dbos_trio.testing._crash import (
    STEP_KINDS,
    Checkpoint,
    CrashPoint,
    CrashPointNotReached,
    run_until_crash,
)
from dbos_trio.testing._databases import temporary_sqlite_url
from dbos_trio.testing._launch import launched

if TYPE_CHECKING:
    from dbos_trio._dbos import DBOS


@attrs.frozen(kw_only=True)
class CrashRecovery:
    """One scenario: where the first run crashed, and how the recovered run ended.

    ``dbos`` is launched (on the scenario's database, after recovery) while the check
    runs, so the check can look at the workflow's steps, events and status through it.
    """

    scenario: int  # 1-based
    point: CrashPoint
    crashed_at: Checkpoint
    crashed_before: bool  # crashed instead of writing ``crashed_at``
    committed: tuple[Checkpoint, ...]  # the workflow's writes that committed before it
    baseline: tuple[Checkpoint, ...]  # every checkpoint of an uncrashed run
    workflow_id: str
    dbos: DBOS
    status: str  # the workflow's status after recovery
    result: Any  # what get_result returned (None if it raised)
    error: BaseException | None  # what get_result raised


async def _observe(
    dbos: DBOS,
    start: Callable[[DBOS], Awaitable[object]],
    point: CrashPoint | None,
    workflow_id: str,
    background_interval: float | Literal["auto"] | None,
) -> tuple[list[Checkpoint], Checkpoint | None, bool]:
    async with run_until_crash(
        dbos, point, workflow_id=workflow_id, background_interval=background_interval
    ) as run:
        with SetWorkflowID(workflow_id):
            await start(dbos)
        await run.wait()
    return run.checkpoints, run.crash, run.crashed_before


async def crash_at_every_checkpoint(
    build: Callable[[Config], DBOS],
    start: Callable[[DBOS], Awaitable[object]],
    check: Callable[[CrashRecovery], Awaitable[None] | None],
    *,
    workflow_id: str = "crash-test-workflow",
    app_name: str = "dbos-crash-test",
    database: Callable[[], AbstractContextManager[str]] = temporary_sqlite_url,
    before_outcome: bool = True,
    before_steps: bool = False,
    config: Mapping[str, Any] | None = None,
    background_interval: float | Literal["auto"] | None = "auto",
) -> list[CrashRecovery]:
    """Crash the workflow ``start`` starts at each of its checkpoints; check each recovery.

    First an uncrashed run (on a fresh database) lists the workflow's checkpoints
    (:class:`~dbos_trio.testing.Checkpoint`). Then, for each of them — and, with
    ``before_outcome``, once more instead of writing the outcome; with ``before_steps``,
    once more instead of writing each step-like checkpoint (its body ran, its row is
    lost: where an at-least-once body runs twice, and an exactly-once transaction must
    not) — on a fresh database:

    1. ``build(config)`` makes the application (a new ``DBOS`` with its workflows
       registered; reset your per-run counters here: it is called once per run,
       the uncrashed one included);
    2. it is launched, ``start(dbos)`` is called inside ``SetWorkflowID(workflow_id)``
       (so the first workflow it starts or enqueues is the one watched), and the executor
       is killed at the checkpoint (:func:`~dbos_trio.testing.run_until_crash`);
    3. the same ``DBOS`` is launched again on the same database, recovery runs, and the
       workflow's outcome is awaited;
    4. ``check(report)`` runs (sync or async) with a :class:`CrashRecovery`, while the
       recovered executor is still launched. Assert your invariant there.

    ``database()`` yields a fresh database URL per run (a temporary SQLite file by
    default; ``lambda: temporary_postgres_url(server)`` for PostgreSQL). ``config``
    holds extra :class:`~dbos_trio.Config` fields. Returns every report.
    Raises :class:`~dbos_trio.testing.CrashPointNotReached` if a run never gets to its
    checkpoint (the workflow does not take the same path every time).
    """

    def make_config(url: str) -> Config:
        return Config(app_name=app_name, database_url=url, **dict(config or {}))

    with database() as url:
        baseline, _, _ = await _observe(
            build(make_config(url)), start, None, workflow_id, background_interval
        )
    points = [CrashPoint.after_checkpoint(workflow_id, c.ordinal) for c in baseline]
    if before_steps:
        points += [
            CrashPoint.before_checkpoint(workflow_id, c.ordinal)
            for c in baseline
            if c.kind in STEP_KINDS and c.recorded
        ]
    if before_outcome and any(c.kind == "outcome" for c in baseline):
        points.append(CrashPoint.before_outcome(workflow_id))
    reports: list[CrashRecovery] = []
    for scenario, point in enumerate(points, start=1):
        with database() as url:
            dbos = build(make_config(url))
            committed, crash, crashed_before = await _observe(
                dbos, start, point, workflow_id, background_interval
            )
            if crash is None:
                raise CrashPointNotReached(f"scenario {scenario}: {point} was never reached")
            async with launched(dbos, background_interval=background_interval):
                handle = await dbos.retrieve_workflow(workflow_id)
                result: Any = None
                error: BaseException | None = None
                try:
                    result = await handle.get_result()
                except Exception as raised:
                    error = raised
                status = (await handle.get_status()).status
                report = CrashRecovery(
                    scenario=scenario,
                    point=point,
                    crashed_at=crash,
                    crashed_before=crashed_before,
                    committed=tuple(committed),
                    baseline=tuple(baseline),
                    workflow_id=workflow_id,
                    dbos=dbos,
                    status=status,
                    result=result,
                    error=error,
                )
                checked = check(report)
                if inspect.isawaitable(checked):
                    await checked
            reports.append(report)
    return reports
