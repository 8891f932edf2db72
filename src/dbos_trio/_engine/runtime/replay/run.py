"""Replaying recorded workflows against the application's current code, one by one.

Invariants, and why:

* The engine runs unchanged: each replay is one ordinary execution
  (:func:`~dbos_trio._engine.workflows.execution.execute`) of the registered function
  with its recorded inputs, in an executor whose system database is the sandbox
  (:mod:`.sandbox`) and whose every look-up of a checkpoint goes through the probe
  (:mod:`.probe`). So what is checked is what recovery would do, not a model of it.
* Time is virtual: each replay is its own ``trio.run`` under an autojumping
  ``MockClock``, so a recorded week of sleep replays at once, and a replay that waits
  on something no checkpoint answers ends at :data:`STALL_LIMIT` (virtual) instead of
  hanging.
* One replay's failure is its own verdict: undecodable inputs, an unregistered name, an
  exception of the new code are reported and the next workflow replays.
* The application is not launched: the ``DBOS`` instance's slot holds the sandbox's
  executor only while its replay runs (so ``dbos.sleep`` and friends reach it), and a
  launched instance is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import cast

import attrs
import trio
import trio.testing

from dbos_trio._clock import Clock
from dbos_trio._config import Config
from dbos_trio._core import replay as verdicts
from dbos_trio._core.replay import ReplayResult
from dbos_trio._core.statuses import ERROR, SUCCESS
from dbos_trio._engine.runtime.dispatch import _bound_receiver, coerce_portable_arguments
from dbos_trio._engine.runtime.replay.history import RecordedHistory
from dbos_trio._engine.runtime.replay.probe import Probe
from dbos_trio._engine.runtime.replay.sandbox import SandboxDatabase
from dbos_trio._engine.state import Executor, ExecutorSlot
from dbos_trio._engine.workflows.execution import execute
from dbos_trio._engine.workflows.start import ExecutionPlan
from dbos_trio._identity import Identity, resolve_identity
from dbos_trio._registry import Registry
from dbos_trio._serialization import PORTABLE_JSON
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.records import ClaimedWorkflow
from dbos_trio.errors import DBOSException, DBOSWorkflowFunctionNotFoundError

logger = logging.getLogger("dbos_trio.check")

# How long (virtual seconds) a replay may wait on something no checkpoint answers.
STALL_LIMIT = 100 * 365 * 86400.0
_OWNER = "dbos-trio-check"


@attrs.frozen
class ReplayApp:
    """The parts of an application (a ``DBOS`` instance, not launched) a replay runs."""

    config: Config
    registry: Registry
    slot: ExecutorSlot


def replay_all(
    app: ReplayApp,
    histories: Iterable[RecordedHistory],
    on_result: Callable[[ReplayResult], None] | None = None,
    before_each: Callable[[], None] | None = None,
) -> list[ReplayResult]:
    """Replay each history against ``app``'s registered code; the verdicts, in order.

    Synchronous: each replay is its own ``trio.run`` (call it from a thread when inside
    one, as :mod:`dbos_trio._ops.check` does). A launched application raises
    :class:`~dbos_trio.DBOSException` before anything runs. Errors of the new code are
    verdicts, never raised; ``KeyboardInterrupt`` stops the loop, and so does whatever
    ``before_each`` raises (called before each replay: a caller's cancellation).
    """
    if app.slot.executor is not None:
        raise DBOSException(
            "check replays against an application that is not launched: call it outside launched()"
        )
    identity = resolve_identity(app.config, app.registry.all())
    results: list[ReplayResult] = []
    app.registry.freeze()
    try:
        for history in histories:
            if before_each is not None:
                before_each()
            clock = trio.testing.MockClock(autojump_threshold=0)
            result = trio.run(_replay, app, identity, history, clock=clock)
            results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        app.slot.executor = None
        app.registry.thaw()
    return results


def _result(history: RecordedHistory, verdict: str, message: str, probe: Probe) -> ReplayResult:
    row = history.row
    return ReplayResult(
        workflow_id=row.workflow_id,
        name=row.name,
        status=row.status,
        application_version=row.application_version,
        verdict=verdict,
        message=message,
        recorded_calls=len(history.steps),
        replayed_calls=len(probe.replayed),
        recorded=probe.recorded,
        new=probe.new,
    )


async def _replay(app: ReplayApp, identity: Identity, history: RecordedHistory) -> ReplayResult:
    row = history.row
    probe = Probe(row.workflow_id, history.by_id())
    registered = app.registry.find(row.name or "")
    if registered is None:
        return _result(
            history,
            verdicts.NOT_REGISTERED,
            f"the new code registers no workflow named {row.name!r}",
            probe,
        )
    sandbox = SandboxDatabase(probe)
    async with trio.open_nursery() as nursery:
        executor = Executor(
            config=app.config,
            registry=app.registry,
            sysdb=cast(SystemDatabase, sandbox),
            identity=identity,
            clock=Clock(),
            nursery=nursery,
        )
        executor.replay = probe
        claimed = ClaimedWorkflow(
            workflow_id=row.workflow_id,
            name=registered.name,
            class_name=row.class_name,
            config_name=row.config_name,
            inputs=row.inputs,
            serialization=row.serialization,
            deadline_epoch_ms=None,
            recovery_attempts=0,
            queue_name=row.queue_name or "",
            partition_key=row.queue_partition_key,
            priority=row.priority or 0,
            created_at=row.created_at or 0,
        )
        try:
            bound = _bound_receiver(registered, claimed)
        except DBOSWorkflowFunctionNotFoundError as missing:
            return _result(history, verdicts.NOT_REGISTERED, str(missing), probe)
        try:
            args, kwargs = executor.codec.decode_inputs(row.inputs, row.serialization)
            if row.serialization == PORTABLE_JSON:
                args, kwargs = coerce_portable_arguments(registered, args, kwargs, len(bound))
        except Exception as undecodable:
            return _result(
                history,
                verdicts.UNDECODABLE,
                f"cannot replay: its inputs ({row.serialization}) cannot be decoded here: "
                f"{undecodable}",
                probe,
            )
        plan = ExecutionPlan(
            registered=registered,
            workflow_id=row.workflow_id,
            owner_xid=_OWNER,
            serialization=row.serialization or executor.codec.default_format,
            deadline_epoch_ms=None,  # the check replays the calls; a deadline is not one
            args=bound + args,
            kwargs=kwargs,
            replaying=True,
            recorded=probe.steps,
        )
        execution = executor.begin_local(row.workflow_id, _OWNER)
        app.slot.executor = executor
        raised: BaseException | None = None
        try:
            with trio.move_on_after(STALL_LIMIT) as stall:
                await execute(executor, plan, execution)
        except KeyboardInterrupt:
            raise
        except BaseException as error:
            raised = error
        finally:
            app.slot.executor = None
        nursery.cancel_scope.cancel()
    return _conclude(history, probe, sandbox, stalled=stall.cancelled_caught, raised=raised)


def _conclude(
    history: RecordedHistory,
    probe: Probe,
    sandbox: SandboxDatabase,
    *,
    stalled: bool,
    raised: BaseException | None,
) -> ReplayResult:
    if probe.new is not None:
        if probe.recorded is not None:
            message = verdicts.diverged_message(probe.recorded, probe.new)
            return _result(history, verdicts.DIVERGED, message, probe)
        return _result(history, verdicts.NEW_CODE, verdicts.past_record_message(probe.new), probe)
    if sandbox.refused is not None:
        return _result(
            history,
            verdicts.DIVERGED,
            f"the new code asked the system database for {sandbox.refused} where no "
            "checkpoint answers it",
            probe,
        )
    if stalled:
        return _result(
            history,
            verdicts.DIVERGED,
            "the new code waited on something no checkpoint answers (it never returned)",
            probe,
        )
    missing = probe.first_unreplayed()
    if missing is not None:
        return _result(history, verdicts.DIVERGED, verdicts.ended_early_message(missing), probe)
    message = "replays its whole record"
    outcome = sandbox.outcome
    recorded_status = history.row.status
    if outcome is None and raised is not None:
        message += f"; the replay stopped with {type(raised).__name__}: {raised}"
    elif (
        outcome is not None
        and recorded_status in (SUCCESS, ERROR)
        and outcome.status != recorded_status
    ):
        message += f"; it ends in {outcome.status} where the record has {recorded_status}"
    return _result(history, verdicts.COMPATIBLE, message, probe)
