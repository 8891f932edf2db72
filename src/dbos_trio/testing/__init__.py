"""Test your dbos_trio workflows: fresh databases, virtual time, and crash injection.

**Databases.** :func:`temporary_sqlite_url` yields a SQLite file in a new temporary
directory; :func:`temporary_postgres_url` creates (and afterwards drops) a database on a
PostgreSQL server. The pytest plugin (:mod:`dbos_trio.testing.pytest_plugin`) wraps them in
fixtures, down to a launched ``DBOS`` (``launched_dbos``).

**Virtual time.** Run the test under ``trio.testing.MockClock(autojump_threshold=0)``
(pytest-trio's ``autojump_clock`` fixture) on a SQLite database and launch with
:func:`launched` (or a plain ``dbos.launched()``, which paces itself the same way):
durable sleeps, workflow timeouts, ``recv``/``get_event`` timeouts, step retries, rate
limits and queue polling all run on Trio's clock, which jumps straight to the next
deadline whenever every task waits. A week of durable sleep takes milliseconds. The
SQLite backend never waits on a socket or a thread, so the clock cannot jump while a
query is in flight — which is why virtual time is refused on PostgreSQL.

::

    async def test_reminder_is_sent_after_a_week(autojump_clock):
        dbos = DBOS(Config(app_name="app", database_url=url))
        ...
        async with launched(dbos):
            handle = await dbos.start_workflow(remind, "ann")
            assert await handle.get_result() == "sent"   # 7 virtual days later

**Crash injection.** :func:`run_until_crash` launches an executor and kills it at a
:class:`CrashPoint` — after (or instead of) a given checkpoint write of a workflow — as if
the process had died there: what committed stays, nothing more is written, no workflow
code runs past the point. Relaunch the same ``DBOS`` to let recovery run::

    async with run_until_crash(dbos, CrashPoint.after_step("order-1", 3)) as run:
        with SetWorkflowID("order-1"):
            await dbos.start_workflow(checkout)
        await run.wait()                    # cancelled at the crash
    async with launched(dbos):              # recovery re-runs from step 4
        assert await (await dbos.retrieve_workflow("order-1")).get_result() == "ok"

:func:`crash_at_every_checkpoint` does this for every checkpoint of a workflow in turn,
each on a fresh database, and calls your invariant after each recovery.
"""

from dbos_trio._core.replay import CheckReport, DurableCall, ReplayResult
from dbos_trio._engine.runtime.replay.history import RecordedHistory
from dbos_trio._exports import fixup_module_metadata
from dbos_trio.testing._check import check_upgrade, read_bundle
from dbos_trio.testing._crash import (
    Checkpoint,
    CheckpointKind,
    CrashPoint,
    CrashPointNotReached,
    CrashRun,
    SimulatedCrash,
    run_until_crash,
)
from dbos_trio.testing._databases import sqlite_url, temporary_postgres_url, temporary_sqlite_url
from dbos_trio.testing._every import CrashRecovery, crash_at_every_checkpoint
from dbos_trio.testing._launch import (
    VIRTUAL_BACKGROUND_INTERVAL,
    VirtualTimeError,
    launched,
    on_virtual_time,
)

__all__ = [
    "VIRTUAL_BACKGROUND_INTERVAL",
    "CheckReport",
    "Checkpoint",
    "CheckpointKind",
    "CrashPoint",
    "CrashPointNotReached",
    "CrashRecovery",
    "CrashRun",
    "DurableCall",
    "RecordedHistory",
    "ReplayResult",
    "SimulatedCrash",
    "VirtualTimeError",
    "check_upgrade",
    "crash_at_every_checkpoint",
    "launched",
    "on_virtual_time",
    "read_bundle",
    "run_until_crash",
    "sqlite_url",
    "temporary_postgres_url",
    "temporary_sqlite_url",
]

fixup_module_metadata(__name__, globals(), __all__)
del fixup_module_metadata
