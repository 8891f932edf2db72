"""The system database a replayed execution sees: the record, read-only, and nothing else.

Invariant: nothing is written and nothing outside is read. The execution's checkpoints come
from the record (loaded before the replay, from a database or a bundle); its outcome is
kept here for the report; any other call — a write the new code would make past the record
(a patch marker, a child's row), or a read no checkpoint answers — stops the replay through
the probe instead of reaching a database. So the engine runs unchanged, and the sandbox
needs only the few methods an execution calls.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

from dbos_trio._engine.runtime.replay.probe import Probe, ReplayStop
from dbos_trio._sysdb.protocol import BackgroundTask, SystemDatabase
from dbos_trio._sysdb.records import InitResult, NewWorkflow, Outcome, ParentStep, RecordedStep
from dbos_trio._sysdb.wakeups import WakeupRegistry


class SandboxDatabase:
    """A read-only stand-in for :class:`~dbos_trio._sysdb.protocol.SystemDatabase`."""

    def __init__(self, probe: Probe) -> None:
        self._probe = probe
        self.wakeups = WakeupRegistry()
        self.outcome: Outcome | None = None
        self.refused: str | None = None  # a database call no checkpoint answers

    # --- lifecycle -----------------------------------------------------------------------

    async def close(self) -> None:
        return None

    def background_tasks(self) -> list[BackgroundTask]:
        return []

    @property
    def recheck_interval(self) -> float:
        return 3600.0  # nothing changes in a sandbox: waiters need not look again

    def retry_counts(self) -> tuple[int, int]:
        return (0, 0)

    # --- what an execution asks -----------------------------------------------------------

    async def load_steps(self, workflow_id: str) -> dict[int, RecordedStep]:
        return dict(self._probe.steps)

    async def record_outcome(
        self,
        workflow_id: str,
        owner_xid: str,
        *,
        status: str,
        output: str | None,
        error: str | None,
        completed_at_ms: int,
    ) -> bool:
        self.outcome = Outcome(status=status, output=output, error=error, serialization=None)
        return True

    async def check_owner(self, workflow_id: str, owner_xid: str) -> None:
        return None  # the replay owns its workflow (a fence after a replayed sleep)

    async def record_step(
        self, owner_xid: str, step: RecordedStep, *, workflow_id: str, application_name: str | None
    ) -> None:
        # Past the record (a patch marker the record does not have): the new code's call.
        self._probe.stop(step.function_id, step.function_name, sys._getframe(1))

    async def init_workflow(self, new: NewWorkflow, parent: ParentStep | None) -> InitResult:
        if parent is not None:
            self._probe.stop(parent.function_id, parent.function_name, sys._getframe(1), child=True)
        return self._refuse("init_workflow")

    def _refuse(self, method: str) -> NoReturn:
        if self.refused is None and not self._probe.stopped:
            self.refused = method
        raise ReplayStop()

    def __getattr__(self, name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
        if not inspect.iscoroutinefunction(getattr(SystemDatabase, name, None)):
            raise AttributeError(name)

        async def refused(*args: Any, **kwargs: Any) -> Any:
            return self._refuse(name)

        return refused
