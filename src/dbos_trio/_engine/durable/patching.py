"""Patching: a workflow body that changed stays replayable by the history it already has.

A patch is a marker checkpoint, ``DBOS.patch-<name>`` with no output, written at the step
id the body would use next. The marker is what the official SDKs write (dbos 3.4), so an
execution patched by one SDK replays under another. The rule, with ``p`` the next id:

* :func:`patch` — nothing recorded at ``p``: a new execution; record the marker at ``p``
  and answer True (run the new code). The marker is recorded at ``p``: a replay of a
  patched execution; take ``p`` and answer True. Anything else at ``p``: the execution
  predates the patch; take no id and answer False (run the old code, whose checkpoints
  start at ``p``).
* :func:`deprecate_patch` — always True; takes ``p`` only when the marker is there, and
  never writes one. Executions with and without the marker both replay once the old
  branch is gone; after they have all ended, the call can be removed.

Invariant: whether the marker takes its id is decided when the id is handed out — at the
call in the workflow body, at the call's turn in a durable nursery (:mod:`.turns`) — and
from the checkpoints this execution loaded when it started, never from a later read. An
id is only ever written by the execution that holds it (the fence), so what was loaded at
``p`` is what is there; the decision, like every id, depends only on the history and the
program, never on scheduling. That is why the official SDK's async-form refusal
(``DBOSPatchNondeterminismError``, siblings reserving ids between its read and its
reservation) has no counterpart here: there is no read between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from dbos_trio._core import validate
from dbos_trio._engine.context import (
    WorkflowContext,
    current_step,
    workflow_outside_steps,
)
from dbos_trio._engine.workflows import checkpoint, placement
from dbos_trio._engine.workflows.checkpoint import Slot
from dbos_trio._engine.workflows.turns import Ticket
from dbos_trio.errors import DBOSException

PATCH_PREFIX = "DBOS.patch-"


def marker_name(name: str) -> str:
    """The step name the patch ``name`` is recorded under (as every SDK records it)."""
    return PATCH_PREFIX + name


def patch(name: str) -> Coroutine[Any, Any, bool]:
    """True where the workflow runs the patched code, False where its history predates it.

    Not a coroutine function: the place is taken at the call, like a step's. Refused
    outside a workflow body and inside a step (:class:`DBOSException`), and for an empty
    name, before anything is written. Cancellation before the marker is recorded leaves
    nothing: a later execution decides again, and finds the id free again.
    """
    ctx = _require_workflow("patch", name)
    marker = marker_name(name)
    slot = _reserve_if(ctx, marker, consume=lambda found: found is None or found == marker)
    return _patched(slot, marker)


def deprecate_patch(name: str) -> Coroutine[Any, Any, bool]:
    """Always True; takes the patch marker's id where the history has the marker.

    For the step of removing a patched branch: executions recorded with the marker and
    those recorded without it (newer than the patch's removal) both replay. Refused as
    :func:`patch` is.
    """
    ctx = _require_workflow("deprecate_patch", name)
    marker = marker_name(name)
    slot = _reserve_if(ctx, marker, consume=lambda found: found == marker)
    return _deprecated(slot)


def _require_workflow(call: str, name: str) -> WorkflowContext:
    validate.text(name, f"{call}: name")
    ctx = workflow_outside_steps()
    if ctx is None:
        where = "inside a step" if current_step.get() is not None else "outside a workflow"
        raise DBOSException(f"{call}({name!r}) must be called from a workflow body, not {where}")
    return ctx


def _reserve_if(
    ctx: WorkflowContext, marker: str, *, consume: Callable[[str | None], bool]
) -> Slot:
    """A slot whose ticket takes its id only if ``consume(recorded name at the id)``."""

    def decide(function_id: int) -> int:
        recorded = ctx.recorded_at(function_id)
        return 1 if consume(None if recorded is None else recorded.function_name) else 0

    ticket = Ticket(marker, decide=decide)
    placement.submit(ctx, ticket)  # placed now, or at its turn in a durable nursery
    return Slot(ctx, marker, ticket)


async def _patched(slot: Slot, marker: str) -> bool:
    await slot.placed()
    if slot.ticket.count == 0:
        return False  # history predates the patch: no id taken, nothing written
    if slot.ctx.recorded_at(slot.function_id) is not None:
        return True  # replaying a patched execution
    executor = slot.executor
    await checkpoint.record(slot, started_at_ms=executor.clock.now_ms())
    return True


async def _deprecated(slot: Slot) -> bool:
    await slot.placed()
    return True
