"""Fixtures and helpers for the tests of durable workflows.

* ``dbos_url``: a fresh, migrated database per test, on each backend in turn (the
  ``system_database_url`` fixture of :mod:`support.backends`), as a URL
  :class:`dbos_trio.Config` accepts.
* ``make_dbos``: a :class:`DBOS` on that database with test-friendly defaults.
* :func:`reexecute`: run a workflow body again from its stored row, as recovery would
  after a crash: the row is set back to PENDING under a new owner token and the engine runs
  it with its recorded checkpoints loaded.
* :class:`StatementCounter` (fixture ``statement_counter``): statements, round trips and
  commits issued through the Trio psycopg driver while it is installed (PostgreSQL only),
  those of one task apart from the rest (the executor's background tasks) when asked.

The fixtures are registered by ``tests/conftest.py``; the row helpers (``query``,
``status_row``, ...) are :mod:`support.backends`'.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import attrs
import pytest
import trio
from psycopg import pq

from dbos_trio import DBOS, Config
from dbos_trio._engine.workflows.execution import execute as execute_plan
from dbos_trio._engine.workflows.start import ExecutionPlan
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._registry import WORKFLOW_ATTRIBUTE, RegisteredWorkflow

from support.backends import execute

APP_NAME = "wf-tests"


@pytest.fixture
def dbos_url(system_database_url: str) -> str:
    """A fresh, already migrated database for this test, as a URL (each backend in turn)."""
    return system_database_url


@pytest.fixture
def make_dbos(dbos_url: str) -> Callable[..., DBOS]:
    """``make_dbos(**config)``: a DBOS on the test's database (app ``wf-tests``, v1)."""

    def make(**overrides: Any) -> DBOS:
        settings: dict[str, Any] = {
            "app_name": APP_NAME,
            "database_url": dbos_url,
            "app_version": "v1",
        }
        settings.update(overrides)
        return DBOS(Config(**settings))

    return make


def registered_of(fn: Callable[..., Any]) -> RegisteredWorkflow:
    target = getattr(fn, "__func__", fn)
    registered = getattr(target, WORKFLOW_ATTRIBUTE)
    assert isinstance(registered, RegisteredWorkflow)
    return registered


async def reexecute(
    dbos: DBOS,
    url: str,
    fn: Callable[..., Any],
    workflow_id: str,
    *bound: Any,
) -> Any:
    """Run ``workflow_id`` again from its stored row, as recovery would after a crash.

    The row goes back to PENDING under a fresh owner token (what a claim does), then the
    engine runs ``fn``'s body with the stored inputs (``bound`` is prepended: the instance
    or class of a member workflow) and the recorded checkpoints loaded. Returns what the
    body returns, or raises what it raises.
    """
    executor = dbos._require_executor("reexecute")
    token = str(uuid.uuid4())
    changed = await execute(
        url,
        "UPDATE {t}workflow_status SET status = 'PENDING', owner_xid = %s, "
        "completed_at = NULL WHERE workflow_uuid = %s",
        token,
        workflow_id,
    )
    assert changed == 1
    row = await executor.sysdb.get_workflow(workflow_id)
    assert row is not None
    args, kwargs = executor.codec.decode_inputs(row.inputs, row.serialization)
    plan = ExecutionPlan(
        registered=registered_of(fn),
        workflow_id=workflow_id,
        owner_xid=token,
        serialization=row.serialization or executor.codec.default_format,
        deadline_epoch_ms=None,
        args=tuple(bound) + tuple(args),
        kwargs=kwargs,
        replaying=True,
    )
    execution = executor.begin_local(workflow_id, token)
    return await execute_plan(executor, plan, execution)


# --- counting what the driver sends ----------------------------------------------------


@attrs.define
class Counts:
    statements: int = 0
    round_trips: int = 0
    commits: int = 0

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            self.statements - other.statements,
            self.round_trips - other.round_trips,
            self.commits - other.commits,
        )


_IDLE = pq.TransactionStatus.IDLE
_INTRANS = pq.TransactionStatus.INTRANS


class StatementCounter:
    """Counts, for every :class:`TrioConnection` while installed:

    * statements: each ``execute`` call, and each ``fetch`` its fast path runs;
    * round trips: each conversation the driver runs with the server (``wait``);
    * commits: a statement that ran outside a transaction block and succeeded (an implicit
      autocommit transaction), or a transaction block that ended committed.

    With ``task`` set, ``counts`` takes only what that task sends, and ``others`` what
    every other task sends (the executor's background tasks).
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts = Counts()
        self.others = Counts()
        # When set, only what this task sends counts (not the executor's background tasks).
        self.task: trio.lowlevel.Task | None = None
        original_wait = TrioConnection.wait
        original_execute = TrioConnection.execute
        counter = self

        async def wait(self: TrioConnection, gen: Any, *args: Any, **kwargs: Any) -> Any:
            counted = counter.counts if counter.watching() else counter.others
            before = self.pgconn.transaction_status
            counted.round_trips += 1
            result = await original_wait(self, gen, *args, **kwargs)
            after = self.pgconn.transaction_status
            if before == _INTRANS and after == _IDLE:
                counted.commits += 1  # COMMIT of a block (a failed block is INERROR)
            return result

        def counting(original: Any) -> Any:
            async def statement(self: TrioConnection, *args: Any, **kwargs: Any) -> Any:
                counted = counter.counts if counter.watching() else counter.others
                counted.statements += 1
                implicit = self.autocommit and self.pgconn.transaction_status == _IDLE
                result = await original(self, *args, **kwargs)
                if implicit and self.pgconn.transaction_status == _IDLE:
                    counted.commits += 1
                return result

            return statement

        original_fetch = TrioConnection.fetch

        async def fetch(self: TrioConnection, query: Any, params: Any) -> Any:
            # fetch falls back on execute for what its fast path does not take: count the
            # statement once, in whichever of the two sends it.
            if self.fast_statement_for(query, params) is not None:
                return await counting(original_fetch)(self, query, params)
            return await original_fetch(self, query, params)

        monkeypatch.setattr(TrioConnection, "wait", wait)
        monkeypatch.setattr(TrioConnection, "execute", counting(original_execute))
        monkeypatch.setattr(TrioConnection, "fetch", fetch)

    def watching(self) -> bool:
        return self.task is None or trio.lowlevel.current_task() is self.task

    def snapshot(self) -> Counts:
        return Counts(self.counts.statements, self.counts.round_trips, self.counts.commits)

    def others_snapshot(self) -> Counts:
        """What tasks other than ``task`` have sent so far."""
        return Counts(self.others.statements, self.others.round_trips, self.others.commits)


@pytest.fixture
def statement_counter(monkeypatch: pytest.MonkeyPatch) -> StatementCounter:
    return StatementCounter(monkeypatch)
