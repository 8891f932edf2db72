"""Crash injection: run an executor until a chosen checkpoint, then kill it.

A *checkpoint* here is a durable write made for the watched workflow, in the order the
executor makes them: its row being created (``start``), its dequeue, each step's
checkpoint (``step``), a child's start recorded in it (``child``), a ``send``, a ``recv``
that consumed a message, a ``set_event``, a stream write, and its outcome. Each gets an
ordinal, from 1.

The executor's system database is wrapped (before any workflow can write through it) by a
watcher that counts those writes. At the :class:`CrashPoint` it either lets the write
commit and then crashes (the default), or crashes instead of writing (``before=True``).
Crashing means, in this order and with no ``await`` in between: the database connection
is cut (for SQLite, closed: a write already past its first checkpoint finds it closed), the
launch's cancel scope is cancelled (every task of the executor and the test's block), and
every later call through the watcher fails with :class:`SimulatedCrash`. The task that made
the write gets ``trio.Cancelled`` from it, so no code of the workflow runs after the crash
point — as if the process had died there. What committed stays; nothing else is written.
Relaunch the same ``DBOS`` on the same database to let recovery run.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import attrs
import trio

from dbos_trio._sysdb.errors import DatabaseClosed
from dbos_trio._sysdb.records import (
    Caller,
    ClaimedWorkflow,
    ClaimRequest,
    InitResult,
    NewWorkflow,
    ParentStep,
    RecordedStep,
)
from dbos_trio.testing._launch import launch_settings, launch_with

if TYPE_CHECKING:
    from dbos_trio._dbos import DBOS
    from dbos_trio._sysdb.protocol import SystemDatabase

T = TypeVar("T")

CheckpointKind = Literal[
    "start", "dequeue", "step", "child", "send", "recv", "event", "stream", "outcome"
]
"""What a checkpoint write records: a workflow's start, a dequeue claim, a step, a child
start, a send, a recv, an event, a stream value, or the workflow's outcome."""
# Kinds that record a row in operation_outputs at their function_id (when ``recorded``).
STEP_KINDS = frozenset({"step", "child", "send", "recv", "event", "stream"})


class SimulatedCrash(DatabaseClosed):
    """The executor was killed by crash injection; its system database is gone."""


class CrashPointNotReached(AssertionError):
    """The watched workflow finished without ever reaching the crash point."""


@attrs.frozen(kw_only=True)
class Checkpoint:
    """One durable write made for the watched workflow."""

    ordinal: int  # its position among the workflow's checkpoints, from 1
    kind: CheckpointKind
    workflow_id: str
    function_id: int | None  # the step id it records at (None: start, dequeue, outcome)
    name: str | None  # step or operation name; the status for an outcome
    recorded: bool  # whether it records a checkpoint row at function_id

    def __str__(self) -> str:
        at = f" #{self.function_id}" if self.function_id is not None else ""
        return f"checkpoint {self.ordinal} ({self.kind}{at} {self.name or ''})".rstrip()


@attrs.frozen(kw_only=True)
class CrashPoint:
    """Where to crash: the first checkpoint of ``workflow_id`` matching every set field.

    ``before=False`` crashes right after that write commits; ``before=True`` crashes
    instead of making it (nothing of it is written).
    """

    workflow_id: str
    ordinal: int | None = None
    function_id: int | None = None
    kinds: frozenset[str] | None = None
    before: bool = False

    def matches(self, checkpoint: Checkpoint) -> bool:
        """Whether ``checkpoint`` is the write this point crashes at (or before)."""
        return (
            checkpoint.workflow_id == self.workflow_id
            and (self.ordinal is None or checkpoint.ordinal == self.ordinal)
            and (self.kinds is None or checkpoint.kind in self.kinds)
            and (
                self.function_id is None
                or (checkpoint.function_id == self.function_id and checkpoint.recorded)
            )
        )

    @classmethod
    def after_checkpoint(cls, workflow_id: str, ordinal: int) -> CrashPoint:
        """After the ``ordinal``-th checkpoint (from 1) of the workflow commits."""
        return cls(workflow_id=workflow_id, ordinal=ordinal)

    @classmethod
    def before_checkpoint(cls, workflow_id: str, ordinal: int) -> CrashPoint:
        """Instead of writing the ``ordinal``-th checkpoint of the workflow."""
        return cls(workflow_id=workflow_id, ordinal=ordinal, before=True)

    @classmethod
    def after_step(cls, workflow_id: str, function_id: int) -> CrashPoint:
        """After the checkpoint at step id ``function_id`` (a step, send, recv, ...) commits."""
        return cls(workflow_id=workflow_id, function_id=function_id, kinds=STEP_KINDS)

    @classmethod
    def before_step(cls, workflow_id: str, function_id: int) -> CrashPoint:
        """After step ``function_id``'s body ran, instead of recording its checkpoint."""
        return cls(workflow_id=workflow_id, function_id=function_id, kinds=STEP_KINDS, before=True)

    @classmethod
    def after_start(cls, workflow_id: str) -> CrashPoint:
        """Right after the workflow's row is created, before any step runs."""
        return cls(workflow_id=workflow_id, kinds=frozenset({"start"}))

    @classmethod
    def before_outcome(cls, workflow_id: str) -> CrashPoint:
        """After the body returned or raised, instead of writing the workflow's outcome."""
        return cls(workflow_id=workflow_id, kinds=frozenset({"outcome"}), before=True)

    @classmethod
    def after_outcome(cls, workflow_id: str) -> CrashPoint:
        """Right after the workflow's outcome commits."""
        return cls(workflow_id=workflow_id, kinds=frozenset({"outcome"}))


@attrs.frozen
class _Write:
    kind: CheckpointKind
    function_id: int | None
    name: str | None
    recorded: bool


class CrashRun:
    """What a :func:`run_until_crash` block saw: the checkpoints, and the crash if any."""

    def __init__(self, workflow_id: str, point: CrashPoint | None) -> None:
        self.workflow_id = workflow_id
        self.point = point
        self.checkpoints: list[Checkpoint] = []  # committed writes of the workflow, in order
        self.crash: Checkpoint | None = None  # where it crashed
        self.crashed_before = False  # crashed instead of writing ``crash``
        self.finished = False  # the workflow reached a terminal status
        self._settled = trio.Event()
        self._scope: trio.CancelScope | None = None

    @property
    def crashed(self) -> bool:
        """Whether the crash point was reached (the executor was killed there)."""
        return self.crash is not None

    async def wait(self) -> None:
        """Wait for the crash (the block is then cancelled) or for the workflow to finish.

        Raises :class:`CrashPointNotReached` if it finished and there was a crash point.
        """
        await self._settled.wait()
        if self.crash is not None:
            await trio.lowlevel.checkpoint()  # cancelled here, with the rest of the block
            return
        if self.point is not None:
            raise CrashPointNotReached(
                f"workflow {self.workflow_id} finished without reaching {self.point}; its "
                f"checkpoints were: {', '.join(map(str, self.checkpoints)) or 'none'}"
            )


class _Watcher:
    """A SystemDatabase that counts the watched workflow's writes and crashes on cue."""

    def __init__(self, inner: SystemDatabase, run: CrashRun) -> None:
        self._inner = inner
        self._run = run
        self._dead = False
        self.wakeups = inner.wakeups

    # --- pass-through ------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(target):
            return target

        async def gated(*args: Any, **kwargs: Any) -> Any:
            self._gate()
            result = await target(*args, **kwargs)
            self._gate()
            return result

        return gated

    @property
    def recheck_interval(self) -> float:
        return self._inner.recheck_interval

    def background_tasks(self) -> list[Any]:
        return self._inner.background_tasks()

    async def close(self) -> None:
        await self._inner.close()

    # --- crash machinery ---------------------------------------------------------------

    def _gate(self) -> None:
        if self._dead:
            raise SimulatedCrash("the executor was killed by crash injection")

    def _checkpoint(self, write: _Write, ordinal: int) -> Checkpoint:
        return Checkpoint(
            ordinal=ordinal,
            kind=write.kind,
            workflow_id=self._run.workflow_id,
            function_id=write.function_id,
            name=write.name,
            recorded=write.recorded,
        )

    def _kill(self) -> None:
        """Cut the database off synchronously: no write may land after this."""
        self._dead = True
        from dbos_trio._sysdb.sqlite.backend import SQLiteSystemDatabase

        if isinstance(self._inner, SQLiteSystemDatabase):
            self._inner.connection.close()

    async def _crash(self, checkpoint: Checkpoint, *, before: bool) -> None:
        run = self._run
        run.crash = checkpoint
        run.crashed_before = before
        self._kill()
        if run._scope is not None:
            run._scope.cancel()
        run._settled.set()
        await trio.lowlevel.checkpoint()  # raises Cancelled in the crashed launch
        raise SimulatedCrash(f"crashed at {checkpoint} of workflow {run.workflow_id}")

    async def _observed(
        self,
        workflow_id: str | None,
        planned: _Write | None,
        call: Callable[[], Awaitable[T]],
        committed: Callable[[T], _Write | None],
    ) -> T:
        """Make ``call``, a write of ``planned`` for ``workflow_id``; count what committed."""
        self._gate()
        run, point = self._run, self._run.point
        watched = workflow_id == run.workflow_id
        if watched and planned is not None and point is not None and point.before:
            upcoming = self._checkpoint(planned, len(run.checkpoints) + 1)
            if point.matches(upcoming):
                await self._crash(upcoming, before=True)
        result = await call()
        self._gate()
        write = committed(result) if watched else None
        if write is not None:
            checkpoint = self._checkpoint(write, len(run.checkpoints) + 1)
            run.checkpoints.append(checkpoint)
            if point is not None and not point.before and point.matches(checkpoint):
                await self._crash(checkpoint, before=False)
            if write.kind == "outcome":
                self._finish()
        return result

    def _finish(self) -> None:
        self._run.finished = True
        self._run._settled.set()

    # --- observed writes ---------------------------------------------------------------

    async def init_workflow(self, new: NewWorkflow, parent: ParentStep | None) -> InitResult:
        call = lambda: self._inner.init_workflow(new, parent)  # noqa: E731
        if parent is not None and parent.workflow_id == self._run.workflow_id:
            child = _Write("child", parent.function_id, parent.function_name, True)
            return await self._observed(parent.workflow_id, child, call, lambda _: child)
        start = _Write("start", None, new.name, False)
        return await self._observed(
            new.workflow_id, start, call, lambda result: start if result.created else None
        )

    async def record_step(
        self, owner_xid: str, step: RecordedStep, *, workflow_id: str, application_name: str | None
    ) -> None:
        write = _Write("step", step.function_id, step.function_name, True)
        await self._observed(
            workflow_id,
            write,
            lambda: self._inner.record_step(
                owner_xid, step, workflow_id=workflow_id, application_name=application_name
            ),
            lambda _: write,
        )

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
        write = _Write("outcome", None, status, False)
        won: bool = await self._observed(
            workflow_id,
            write,
            lambda: self._inner.record_outcome(
                workflow_id,
                owner_xid,
                status=status,
                output=output,
                error=error,
                completed_at_ms=completed_at_ms,
            ),
            lambda won: write if won else None,
        )
        return won

    async def send(
        self,
        *,
        destination_id: str,
        topic: str,
        message: str,
        serialization: str | None,
        message_uuid: str,
        now_ms: int,
        caller: Caller | None,
    ) -> None:
        write = None if caller is None else _Write("send", caller.function_id, "DBOS.send", True)
        await self._observed(
            None if caller is None else caller.workflow_id,
            write,
            lambda: self._inner.send(
                destination_id=destination_id,
                topic=topic,
                message=message,
                serialization=serialization,
                message_uuid=message_uuid,
                now_ms=now_ms,
                caller=caller,
            ),
            lambda _: write,
        )

    async def consume_message(
        self, caller: Caller, topic: str, now_ms: int
    ) -> tuple[str, str | None] | None:
        write = _Write("recv", caller.function_id, "DBOS.recv", True)
        return await self._observed(
            caller.workflow_id,
            write,
            lambda: self._inner.consume_message(caller, topic, now_ms),
            lambda found: None if found is None else write,
        )

    async def set_event(
        self, caller: Caller, key: str, value: str, serialization: str | None, now_ms: int
    ) -> None:
        write = _Write("event", caller.function_id, "DBOS.setEvent", caller.record)
        await self._observed(
            caller.workflow_id,
            write,
            lambda: self._inner.set_event(caller, key, value, serialization, now_ms),
            lambda _: write,
        )

    async def write_stream(
        self,
        caller: Caller,
        key: str,
        value: str,
        serialization: str | None,
        now_ms: int,
        *,
        step_name: str,
    ) -> None:
        write = _Write("stream", caller.function_id, step_name, caller.record)
        await self._observed(
            caller.workflow_id,
            write,
            lambda: self._inner.write_stream(
                caller, key, value, serialization, now_ms, step_name=step_name
            ),
            lambda _: write,
        )

    async def claim(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        def claimed(rows: list[ClaimedWorkflow]) -> _Write | None:
            for row in rows:
                if row.workflow_id == self._run.workflow_id:
                    return _Write("dequeue", None, row.queue_name, False)
            return None

        rows: list[ClaimedWorkflow] = await self._observed(
            self._run.workflow_id, None, lambda: self._inner.claim(request), claimed
        )
        return rows

    # --- other ways to finish ----------------------------------------------------------

    async def cancel_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        self._gate()
        cancelled = await self._inner.cancel_workflows(workflow_ids, now_ms)
        self._gate()
        if self._run.workflow_id in cancelled:
            self._finish()
        return cancelled

    async def sweep_timeouts(self, application_name: str, now_ms: int) -> list[str]:
        self._gate()
        cancelled = await self._inner.sweep_timeouts(application_name, now_ms)
        self._gate()
        if self._run.workflow_id in cancelled:
            self._finish()
        return cancelled

    async def dead_letter(self, workflow_id: str, observed_attempts: int, now_ms: int) -> bool:
        self._gate()
        parked = await self._inner.dead_letter(workflow_id, observed_attempts, now_ms)
        self._gate()
        if parked and workflow_id == self._run.workflow_id:
            self._finish()
        return parked


@asynccontextmanager
async def run_until_crash(
    dbos: DBOS,
    point: CrashPoint | None,
    *,
    workflow_id: str | None = None,
    background_interval: float | Literal["auto"] | None = "auto",
) -> AsyncIterator[CrashRun]:
    """Launch ``dbos`` for the block and kill it at ``point`` (see the module docs).

    The block starts the workflow (``point.workflow_id``) and then ``await run.wait()``s;
    when the crash happens the block is cancelled and exits quietly, the executor dead.
    With ``point=None`` nothing crashes: the block only observes the checkpoints of
    ``workflow_id`` (how the kit enumerates them), and ``run.wait()`` returns when the
    workflow finishes. Launch pacing is as in :func:`~dbos_trio.testing.launched`.

    After the block, ``run.crash`` is the checkpoint it crashed at (None if it did not)
    and ``run.checkpoints`` the workflow's writes that committed, in order. If the crash
    point is reached while the executor is still launching, the block runs with the
    executor already dead.
    """
    watched = point.workflow_id if point is not None else workflow_id
    if watched is None:
        raise ValueError("run_until_crash needs a crash point or a workflow_id to watch")
    run = CrashRun(watched, point)

    def intercept(sysdb: SystemDatabase) -> SystemDatabase:
        return cast("SystemDatabase", _Watcher(sysdb, run))

    settings = launch_settings(dbos, background_interval, intercept)
    entered = False
    with trio.CancelScope() as scope:
        run._scope = scope
        async with launch_with(dbos, settings):
            entered = True
            yield run
    if not entered:
        yield run
