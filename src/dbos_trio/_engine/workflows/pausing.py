"""A paused workflow's execution stops before its next step, after the running ones record.

Invariants, and why:

* Pausing never loses a step's work. ``pause_workflows`` keeps the row's owner token, so a
  step running when the pause lands still records its checkpoint; the execution is
  stopped (its Trio scope cancelled, as a cancel stops it) only once no step of it runs,
  and a step that would start after the pause does not start. Unpausing then runs the
  workflow on from its first step not recorded, and nothing recorded runs twice.
* A workflow that waits between steps (a durable sleep, ``recv``, ``get_event``, a plain
  ``trio.sleep``) is stopped at once: those waits commit nothing until they end, and each
  resumes its remaining wait when the workflow runs again.
* The stopped execution records no outcome: it ends as one that lost its row (it adopts
  whatever outcome the row gets later; a detached one ends at once), so its queue slot is
  freed and its handles wait for the run after the unpause.
* A step whose options say ``on_exhausted="pause"`` pauses its own workflow when its
  last attempt fails, instead of recording the error: the row becomes PAUSED (only while
  this execution still owns it), a WARNING names the workflow, the step, the error and the
  command that runs it again, and the step is run again, from scratch, after the unpause.

Execution-side bookkeeping lives on :class:`~dbos_trio._engine.state.LocalExecution`
(``pause_requested``, ``steps_running``); the watcher (:mod:`..runtime.watch`) and the
pause operation (:mod:`..admin.pausing`) set the request through
:meth:`~dbos_trio._engine.state.Runtime.pause_local`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, NoReturn, TypeVar

import trio

from dbos_trio.errors import DBOSInvalidArgumentError

if TYPE_CHECKING:
    from dbos_trio._engine.context import WorkflowContext
    from dbos_trio._engine.state import LocalExecution

logger = logging.getLogger("dbos_trio.step")

T = TypeVar("T")

OnExhausted = Literal["fail", "pause"]
ON_EXHAUSTED_CHOICES = ("fail", "pause")


def check_on_exhausted(value: object) -> OnExhausted:
    """``value`` as a step's ``on_exhausted`` option, or :class:`DBOSInvalidArgumentError`
    naming the choices (raised at decoration, before anything runs)."""
    if value == "fail":
        return "fail"
    if value == "pause":
        return "pause"
    raise DBOSInvalidArgumentError(
        f"on_exhausted must be one of {', '.join(map(repr, ON_EXHAUSTED_CHOICES))}, not {value!r}"
    )


class StepExhausted(BaseException):
    """Raised inside a step whose last attempt failed and whose options say pause.

    A ``BaseException`` so nothing between the attempt and :func:`counted_step` records or
    swallows it (checkpoints record only ``Exception``\\ s). ``error`` is what the step
    raises instead when its workflow cannot be paused (no longer this execution's)."""

    def __init__(self, step_name: str, last: BaseException, error: Exception) -> None:
        super().__init__(step_name)
        self.step_name = step_name
        self.last = last
        self.error = error


def execution_of(ctx: WorkflowContext) -> LocalExecution | None:
    """The local execution ``ctx`` belongs to (None if another replaced it here)."""
    run = ctx.executor.local.get(ctx.workflow_id)
    return run if run is not None and run.owner_xid == ctx.owner_xid else None


def stop(run: LocalExecution) -> None:
    """Stop a paused execution: its scope's cancellation is then the row's to adopt."""
    run.cancel_requested = True
    run.scope.cancel()


async def counted_step(ctx: WorkflowContext, operation: Callable[[], Awaitable[T]]) -> T:
    """Run one step's checkpointed call (body and record) counted as running.

    A pause requested before it starts stops the execution instead (the step does not
    start); one requested while it runs stops the execution when the last running step
    of it has recorded. A :class:`StepExhausted` pauses the workflow (see the module).

    Cancellation: a ``trio.Cancelled`` (shutdown, cancel, or the pause itself) passes
    through; the count is restored whatever ends the step.
    """
    run = execution_of(ctx)
    if run is None:
        return await operation()
    if run.pause_requested:
        stop(run)
        await trio.lowlevel.checkpoint()  # raises Cancelled: the step does not start
    run.steps_running += 1
    counted = True
    try:
        return await operation()
    except StepExhausted as exhausted:
        run.steps_running -= 1
        counted = False
        await _pause_exhausted(ctx, run, exhausted)
    finally:
        if counted:
            run.steps_running -= 1
        if run.pause_requested and run.steps_running == 0:
            stop(run)


async def _pause_exhausted(
    ctx: WorkflowContext, run: LocalExecution, exhausted: StepExhausted
) -> NoReturn:
    """Hold the workflow (PAUSED, fenced on our token) and stop this execution, once the
    other steps running have recorded; never returns. If the row is no longer ours (it
    was cancelled or taken over), raise the step's error as an unpaused step would."""
    executor = ctx.executor
    paused = await executor.sysdb.pause_own_workflow(
        ctx.workflow_id, ctx.owner_xid, executor.clock.now_ms()
    )
    if not paused:
        raise exhausted.error
    last = exhausted.last
    logger.warning(
        "step %s of workflow %s failed on its last attempt (%s: %s): the workflow is PAUSED "
        "instead of failing (on_exhausted='pause'); fix the cause, then run the step again "
        "with: dbos-trio workflow unpause %s",
        exhausted.step_name,
        ctx.workflow_id,
        type(last).__qualname__,
        last,
        ctx.workflow_id,
    )
    run.pause_requested = True
    if run.steps_running == 0:
        stop(run)
    # Cancelled at once (stopped above), or when the last other running step has recorded.
    await trio.sleep_forever()
