"""Crash injection: run an executor until a chosen checkpoint, then kill it.

A *checkpoint* here is a durable write made for the watched workflow, in the order the
executor makes them: its row being created (``start``), its dequeue, each step's
checkpoint (``step``), a child's start recorded in it (``child``), a ``send``, a ``recv``
that consumed a message, a ``set_event``, a stream write, and its outcome. Each gets an
ordinal, from 1.

The executor's system database is wrapped (before any workflow can write through it) by a
watcher that counts those writes: it intercepts the protocol methods named in one table,
:data:`CHECKPOINT_WRITES` (method name -> the kind of checkpoint it writes), and passes
every other call straight through, so only a new method that writes a checkpoint needs a
line there. At the :class:`CrashPoint` it either lets the write commit and then crashes
(the default), or crashes instead of writing (``before=True``).
Crashing means, in this order and with no ``await`` in between: the database connection
is cut (for SQLite, closed: a write already past its first checkpoint finds it closed), the
launch's cancel scope is cancelled (every task of the executor and the test's block), and
every later call through the watcher fails with :class:`SimulatedCrash`. The task that made
the write gets ``trio.Cancelled`` from it, so no code of the workflow runs after the crash
point — as if the process had died there. What committed stays; nothing else is written.
Relaunch the same ``DBOS`` on the same database to let recovery run.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import attrs
import trio

from dbos_trio._sysdb.errors import DatabaseClosed
from dbos_trio._sysdb.records import (
    Caller,
    ClaimedWorkflow,
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


# THE table of checkpoint writes: each protocol method that durably records something of a
# workflow, by name, and the kind of checkpoint it is. The watcher intercepts these and
# passes every other method straight through, so a new protocol method needs a line here
# only if it writes a checkpoint (and ``_planned``/``_committed`` already read it if its
# arguments are named as its kind's are: ``caller``, ``step``, ``workflow_id``, ...).
# ``init_workflow`` is a ``start``, or a ``child`` when it records the watched workflow's
# start of a child (its ``parent``).
CHECKPOINT_WRITES: Mapping[str, CheckpointKind] = MappingProxyType(
    {
        "init_workflow": "start",
        "claim": "dequeue",
        "record_step": "step",
        "send": "send",
        "consume_message": "recv",
        "set_event": "event",
        "write_stream": "stream",
        "record_outcome": "outcome",
    }
)

# The other ways a workflow ends without an outcome write: method name -> whether the call
# (its arguments, its result) ended the watched workflow.
_FINISHES: Mapping[str, Callable[[Mapping[str, Any], Any, str], bool]] = MappingProxyType(
    {
        "cancel_workflows": lambda _args, cancelled, watched: watched in cancelled,
        "sweep_timeouts": lambda _args, cancelled, watched: watched in cancelled,
        "dead_letter": lambda args, parked, watched: (
            bool(parked) and args["workflow_id"] == watched
        ),
    }
)

# Names of each kind's ``DBOS.*`` operation, recorded when the call gives no ``step_name``.
_OPERATION_NAMES: Mapping[CheckpointKind, str] = MappingProxyType(
    {"send": "DBOS.send", "recv": "DBOS.recv", "event": "DBOS.setEvent"}
)


@functools.cache
def _signature(name: str) -> inspect.Signature:
    from dbos_trio._sysdb.protocol import SystemDatabase

    return inspect.signature(getattr(SystemDatabase, name))


def _arguments(name: str, inner: object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The call's arguments by the protocol's parameter names (callers speak the protocol)."""
    return _signature(name).bind(inner, *args, **kwargs).arguments


def _planned(
    kind: CheckpointKind, args: Mapping[str, Any], watched: str
) -> tuple[str | None, _Write | None]:
    """Which workflow a ``kind`` write with ``args`` is for, and what it would record."""
    if kind == "start":
        parent: ParentStep | None = args["parent"]
        if parent is not None and parent.workflow_id == watched:
            return watched, _Write("child", parent.function_id, parent.function_name, True)
        new: NewWorkflow = args["new"]
        return new.workflow_id, _Write("start", None, new.name, False)
    if kind == "dequeue":
        return watched, None  # which rows it claims is known only from its result
    if kind == "step":
        step: RecordedStep = args["step"]
        return args["workflow_id"], _Write("step", step.function_id, step.function_name, True)
    if kind == "outcome":
        return args["workflow_id"], _Write("outcome", None, args["status"], False)
    caller: Caller | None = args["caller"]
    if caller is None:
        return None, None  # sent from outside any workflow: nobody's checkpoint
    name = args.get("step_name") or _OPERATION_NAMES[kind]
    # A send or recv always records its row; an event or stream value only from a workflow
    # body (from a step it is part of the step's own checkpoint).
    recorded = caller.record if kind in ("event", "stream") else True
    return caller.workflow_id, _Write(kind, caller.function_id, name, recorded)


def _committed(
    kind: CheckpointKind, planned: _Write | None, result: Any, watched: str
) -> _Write | None:
    """What a ``kind`` write that returned ``result`` committed (None: nothing)."""
    if kind == "dequeue":
        claimed: list[ClaimedWorkflow] = result
        for row in claimed:
            if row.workflow_id == watched:
                return _Write("dequeue", None, row.queue_name, False)
        return None
    if planned is None:
        return None
    if planned.kind == "start":
        created: InitResult = result
        return planned if created.created else None
    if kind in ("recv", "outcome"):
        # None: no message to consume; False: the outcome lost its fence.
        return planned if result else None
    return planned


class _Watcher:
    """A SystemDatabase that counts the watched workflow's writes and crashes on cue.

    Every coroutine method is gated (after the crash it raises :class:`SimulatedCrash`);
    those in :data:`CHECKPOINT_WRITES` are counted, those in ``_FINISHES`` watched for the
    workflow's end; everything else passes straight through.
    """

    def __init__(self, inner: SystemDatabase, run: CrashRun) -> None:
        self._inner = inner
        self._run = run
        self._dead = False

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(target):
            return target  # attributes and plain methods: no database call to gate
        kind = CHECKPOINT_WRITES.get(name)
        finishes = _FINISHES.get(name)

        async def gated(*args: Any, **kwargs: Any) -> Any:
            if kind is not None:
                arguments = _arguments(name, self._inner, args, kwargs)
                return await self._observed(kind, arguments, lambda: target(*args, **kwargs))
            self._gate()
            result = await target(*args, **kwargs)
            self._gate()
            if finishes is not None and finishes(
                _arguments(name, self._inner, args, kwargs), result, self._run.workflow_id
            ):
                self._finish()
            return result

        return gated

    async def close(self) -> None:
        # Not gated: the launch closes the backend on its way out, crashed or not.
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
        self, kind: CheckpointKind, args: Mapping[str, Any], call: Callable[[], Awaitable[T]]
    ) -> T:
        """Make ``call``, a ``kind`` write with ``args``; count what it committed for the
        watched workflow, and crash before or after it when it is the crash point."""
        self._gate()
        run, point = self._run, self._run.point
        workflow_id, planned = _planned(kind, args, run.workflow_id)
        watched = workflow_id == run.workflow_id
        if watched and planned is not None and point is not None and point.before:
            upcoming = self._checkpoint(planned, len(run.checkpoints) + 1)
            if point.matches(upcoming):
                await self._crash(upcoming, before=True)
        result = await call()
        self._gate()
        write = _committed(kind, planned, result, run.workflow_id) if watched else None
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
