"""The replayed execution's view of its record: every durable call is compared here.

Invariant: the new code gets a checkpoint only where the record has one under the same
name; anywhere else the probe notes the verdict and raises :class:`ReplayStop`, a
``BaseException`` (so a workflow's ``except Exception`` cannot swallow it), *before* the
call's operation runs — so no step body, sleep, receive or write of the new code runs
past the record. The first verdict is kept: the stop may reach the execution wrapped in
an exception group, or be seen again by a sibling task of a durable nursery, and the
probe, not the exception, is what the runner reads.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import FrameType

import trio

from dbos_trio._core.replay import DurableCall, kind_of
from dbos_trio._sysdb.records import RecordedStep

# Frames in these directories are the machinery between the user's call and the probe.
_MACHINERY = tuple(
    str(directory) + os.sep
    for directory in (Path(__file__).resolve().parents[3], Path(trio.__file__).resolve().parent)
)


class ReplayStop(BaseException):
    """The replay reached where the record cannot answer: the probe holds the verdict."""


def call_site(frame: FrameType | None) -> str | None:
    """``file:line`` of the first frame outside dbos_trio and Trio (the user's call)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_MACHINERY) and not filename.startswith("<frozen"):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


class Probe:
    """:class:`~dbos_trio._engine.state.ReplayProbe` over one workflow's recorded steps."""

    def __init__(self, workflow_id: str, steps: dict[int, RecordedStep]) -> None:
        self.workflow_id = workflow_id
        self.steps = steps
        self.replayed: set[int] = set()
        # The verdict, once the new code left the record: the record's call and the new
        # code's at a divergence, or (past the record) only the new code's.
        self.recorded: DurableCall | None = None
        self.new: DurableCall | None = None

    @property
    def stopped(self) -> bool:
        return self.new is not None

    def lookup(self, workflow_id: str, function_id: int, name: str | None) -> RecordedStep | None:
        if workflow_id != self.workflow_id:
            # Only the replayed workflow runs in a sandbox; anything else is a bug here.
            raise AssertionError(f"replay of {self.workflow_id} looked up {workflow_id}")
        if self.stopped:
            raise ReplayStop()
        recorded = self.steps.get(function_id)
        if name is None:
            return recorded  # a peek (a patch choosing its branch): no call made
        if recorded is not None and recorded.function_name == name:
            self.replayed.add(function_id)
            return recorded
        self.stop(function_id, name, sys._getframe(1))
        raise AssertionError("unreachable")  # stop() raises

    def stop(
        self, function_id: int, name: str, frame: FrameType | None, *, child: bool = False
    ) -> None:
        """Note where the new code left the record (a call of ``name`` at
        ``function_id``) and raise :class:`ReplayStop`."""
        if not self.stopped:
            recorded = self.steps.get(function_id)
            self.new = DurableCall(
                function_id=function_id,
                kind=kind_of(name, child=child),
                name=name,
                where=call_site(frame),
            )
            if recorded is not None:
                self.recorded = recorded_call(recorded)
        raise ReplayStop()

    def first_unreplayed(self) -> DurableCall | None:
        """The first recorded call past the last one the new code replayed (after it
        returned): a call the new code no longer makes. Records before it that the engine
        passed over are not counted (a patch marker consumed by a peek, a child's start
        whose result was recorded)."""
        last = max(self.replayed, default=0)
        for function_id in sorted(self.steps):
            step = self.steps[function_id]
            if function_id > last and kind_of(step.function_name) != "patch":
                return recorded_call(step)
        return None


def recorded_call(step: RecordedStep) -> DurableCall:
    return DurableCall(
        function_id=step.function_id,
        kind=kind_of(step.function_name, child=step.child_workflow_id is not None),
        name=step.function_name,
    )
