"""The state of a launched executor, and of a client: a system database and how to read it.

Invariants, and why:

* Every task an executor runs — background pieces and every workflow it starts — is a
  task of its one nursery (:attr:`Executor.nursery`), so shutdown can cancel and await
  them all before the system database closes (see :mod:`.launch`).
* A workflow running in this process is registered in :attr:`Runtime.local` for as long
  as it runs: handles on it wait on its ``trio.Event`` instead of polling, and a cancel
  made here cancels its Trio scope at once (:meth:`Runtime.stop_local`); one made
  elsewhere, within a watch interval (:mod:`.watch`).
* This module knows no workflow code and no backend: it is the state the other engine
  modules share, so it imports none of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import attrs
import trio

from dbos_trio._clock import Clock
from dbos_trio._config import Config
from dbos_trio._core.admission import RunningCounts
from dbos_trio._engine.observability.hooks import Metrics, Tracing
from dbos_trio._identity import Identity
from dbos_trio._registry import Registry
from dbos_trio._serialization import Codec
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.records import INTERNAL_QUEUE, Outcome, RecordedStep
from dbos_trio._sysdb.wakeups import outcome_key
from dbos_trio.errors import DBOSNotLaunchedError


@attrs.define(eq=False)
class LocalExecution:
    """A workflow execution running in this process, and what it produced.

    Handles on a workflow running here wait on ``done`` (a ``trio.Event``) instead of
    polling the database. ``outcome`` is None if the execution stopped without an outcome
    (shutdown, lost ownership): waiters then fall back to the database.
    """

    workflow_id: str
    # The token this execution writes under (its row's owner_xid while it is ours).
    owner_xid: str
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    done: trio.Event = attrs.field(factory=trio.Event)
    outcome: Outcome | None = None
    returned: Any = None
    raised: BaseException | None = None
    # Set when the workflow was cancelled (here, or elsewhere and seen by the watcher): the
    # scope's cancellation is then the row's outcome to adopt, not a shutdown.
    cancel_requested: bool = False
    # Paused (seen by the watcher, or by a step whose retries ran out): the execution stops
    # when no step of it runs (``steps_running``), so a running step records first
    # (see workflows/pausing.py).
    pause_requested: bool = False
    steps_running: int = 0
    # Run as a task of the executor's nursery (a dequeued or recovered row): nobody awaits
    # the task itself, so an execution that lost its row ends at once instead of waiting
    # for the new owner's outcome (its handles fall back to the row).
    detached: bool = False
    # Writing its own outcome: a row the watcher then finds finished is this write's
    # doing (committed, its reply not yet back), not another executor's, so the watcher
    # leaves the execution alone (the write's reply decides whether it won).
    recording_outcome: bool = False
    # A dequeued execution's queue slot, given back once its body has ended (before its
    # outcome is written): the worker's next claim overlaps that write. Idempotent; the
    # dispatch also calls it when the execution ends, however it ends.
    release_slot: Callable[[], None] | None = None


class ReplayProbe(Protocol):
    """Answers a replayed execution's look-ups of its record instead of the loaded map
    (``dbos-trio check``, :mod:`dbos_trio._engine.runtime.replay`): it sees every durable
    call's step id and name, and may stop the execution where the new code leaves the
    record."""

    def lookup(self, workflow_id: str, function_id: int, name: str | None) -> RecordedStep | None:
        """The checkpoint recorded at ``function_id``; ``name`` is the call's (None: a peek
        that makes no call, as a patch deciding its branch)."""
        ...


@attrs.define
class QueueSet:
    """The queues this executor currently serves, and which have a live worker."""

    served: frozenset[str] = frozenset({INTERNAL_QUEUE})
    working: set[str] = attrs.field(factory=set)


class Runtime:
    """What the engine's non-running parts need: a system database and how to read it.

    Handles, outcome waits and management calls work on a ``Runtime``; a
    :class:`~dbos_trio.Client` is one (it runs no workflow code, so ``local`` stays
    empty), and a launched :class:`Executor` is one with workflows running in it.
    ``app_name`` is None for a client acting for no application.
    """

    def __init__(
        self,
        *,
        sysdb: SystemDatabase,
        codec: Codec,
        clock: Clock,
        app_name: str | None,
        outcome_poll_interval: float,
    ) -> None:
        self.sysdb = sysdb
        self.codec = codec
        self.clock = clock
        self.wakeups = sysdb.wakeups
        self.local: dict[str, LocalExecution] = {}
        self.outcome_poll_interval = outcome_poll_interval
        self._app_name = app_name

    @property
    def app_name(self) -> str | None:
        return self._app_name

    def stop_local(self, workflow_ids: Iterable[str]) -> None:
        """These workflows were cancelled: cancel their Trio scopes if they run here, and
        wake whoever waits for their outcome."""
        for workflow_id in workflow_ids:
            execution = self.local.get(workflow_id)
            if execution is not None:
                execution.cancel_requested = True
                execution.scope.cancel()
            self.wakeups.wake(outcome_key(workflow_id))

    def pause_local(self, workflow_ids: Iterable[str]) -> list[str]:
        """These workflows were paused: each running here stops before its next step (at
        once if no step of it runs now, else when its running steps have recorded). The
        ids newly asked to stop here."""
        asked: list[str] = []
        for workflow_id in workflow_ids:
            execution = self.local.get(workflow_id)
            if execution is None or execution.pause_requested:
                continue
            execution.pause_requested = True
            asked.append(workflow_id)
            if execution.steps_running == 0:
                execution.cancel_requested = True
                execution.scope.cancel()
        return asked


class Executor(Runtime):
    """Runtime state of one launched :class:`~dbos_trio.DBOS` instance."""

    def __init__(
        self,
        *,
        config: Config,
        registry: Registry,
        sysdb: SystemDatabase,
        identity: Identity,
        clock: Clock,
        nursery: trio.Nursery,
        background_interval: float | None = None,
    ) -> None:
        super().__init__(
            sysdb=sysdb,
            codec=Codec(
                config.serializer,
                allow_pickle=config.allow_pickle,
                max_value_bytes=config.max_value_bytes,
                payload_store=config.payload_store,
                payload_store_threshold=config.payload_store_threshold,
            ),
            clock=clock,
            app_name=identity.app_name,
            outcome_poll_interval=config.outcome_poll_interval,
        )
        self.config = config
        self.registry = registry
        self.identity = identity
        self.nursery = nursery
        self.is_latest_version = True
        self.recovered_count = 0
        self.running = RunningCounts()
        self.workflow_names = tuple(sorted(w.name for w in registry.all()))
        self.queue_set = QueueSet()
        # Rows being created or claimed here whose execution is not in ``local`` yet.
        self.starting: set[str] = set()
        # Rows this executor could not interpret: logged once, left alone.
        self.quarantined: set[str] = set()
        # None: the engine's own intervals; else the spacing of background work (tests).
        self.background_interval = background_interval
        # Observability hooks, set at launch when Config turns them on (see .telemetry).
        self.tracing: Tracing | None = None
        self.metrics: Metrics | None = None
        # Cancel scopes of the tasks that start work (dequeue supervisor, orphan sweep):
        # a graceful drain cancels them first (engine/drain.py).
        self.claimers: list[trio.CancelScope] = []
        # The DBOS instance's slot this executor fills while launched (None when opened
        # without one): handles find the instance's next executor through it.
        self.slot: ExecutorSlot | None = None
        # Set only in a replay sandbox: every look-up of a checkpoint goes through it.
        self.replay: ReplayProbe | None = None

    @property
    def app_name(self) -> str:
        return self.identity.app_name

    @property
    def app_version(self) -> str:
        return self.identity.app_version

    @property
    def executor_id(self) -> str:
        return self.identity.executor_id

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` as a task of the executor's nursery."""
        self.nursery.start_soon(fn, *args)

    def begin_local(self, workflow_id: str, owner_xid: str) -> LocalExecution:
        execution = LocalExecution(workflow_id, owner_xid)
        self.local[workflow_id] = execution
        self.starting.discard(workflow_id)
        return execution

    def end_local(self, execution: LocalExecution) -> None:
        if self.local.get(execution.workflow_id) is execution:
            del self.local[execution.workflow_id]
        execution.done.set()
        self.wakeups.wake(outcome_key(execution.workflow_id))


class ExecutorSlot:
    """Where a :class:`~dbos_trio.DBOS` instance keeps its executor while it is launched.

    Registered workflows and queues hold the slot, not the ``DBOS`` instance, so they
    reach the executor without keeping the instance alive or importing it.
    """

    __slots__ = ("executor",)

    def __init__(self) -> None:
        self.executor: Executor | None = None

    def require(self, operation: str) -> Executor:
        """The executor; :class:`~dbos_trio.DBOSNotLaunchedError` naming ``operation`` if
        there is none (before launch, or after shutdown)."""
        executor = self.executor
        if executor is None:
            raise DBOSNotLaunchedError(operation)
        return executor
