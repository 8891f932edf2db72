"""Application versions and stranded work, for every face: list, latest, set latest,
recover an executor's rows, count what waits, diagnose, rename an application.

Each function validates its arguments and asks the :class:`~.reach.Reach` for its runtime
at the call, then returns the coroutine that acts. None is checkpointed: they administer
the application (which code runs which rows), they are not part of a workflow's work.

Invariants, and why:

* **One application at a time, named or the face's own.** ``DBOS`` always acts for its
  application; a client for the one named in the call, else its ``app_name``. For a face
  of no application, as for dbos 3.4's client: a listing and "the latest version" cover
  every application, and promoting a version acts for the application that registered
  it. Recovering an executor's rows refuses to guess
  (:class:`~dbos_trio.DBOSException`), before anything is read.
* **Recovering a live executor runs nothing twice.** Rows their owner stamped within the
  liveness window (three heartbeat intervals) are left alone; the rest move in one write
  that clears each row's owner token, so an owner alive after all loses at its next
  checkpoint write. From ``DBOS``, the window is its own ``Config.heartbeat_interval`` and
  its queue workers are woken to run what moved.

Cancellation: every change is one transaction (a rename: one for the configuration and
in-flight rows, then one per batch; run it again to finish), so a cancelled call did a
transaction whole or not at all. A database failure raises
:class:`~dbos_trio.SystemDatabaseError` after the retries.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from dbos_trio._config import DEFAULT_HEARTBEAT_INTERVAL
from dbos_trio._core import validate
from dbos_trio._engine.admin import rename
from dbos_trio._engine.admin.rename import DEFAULT_BATCH_SIZE, Progress, RenameCounts
from dbos_trio._engine.recovery import adoption, doctor, versions
from dbos_trio._engine.recovery.adoption import window_ms
from dbos_trio._engine.recovery.doctor import Diagnosis
from dbos_trio._engine.state import Executor, Runtime
from dbos_trio._ops.reach import Reach
from dbos_trio._sysdb.records import ActiveCount, ApplicationVersion
from dbos_trio.errors import DBOSException

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "Diagnosis",
    "Progress",
    "RenameCounts",
    "active_workflow_counts",
    "check_rename",
    "diagnose",
    "get_latest_application_version",
    "list_application_versions",
    "recover_executor",
    "rename_application",
    "set_latest_application_version",
    "window_ms",
]


def _one_application(runtime: Runtime, application_name: str | None, operation: str) -> str:
    name = application_name or runtime.app_name
    if name is None:
        raise DBOSException(
            f"Client.{operation} acts for one application: pass application_name, or "
            "open the client with app_name"
        )
    return name


def list_application_versions(
    reach: Reach, *, application_name: str | None = None
) -> Coroutine[Any, Any, list[ApplicationVersion]]:
    """The application's registered versions and the unclaimed ones, newest first; every
    application's for a face of none when no name is given."""
    validate.optional_text(application_name, "application_name")
    runtime = reach.runtime("list_application_versions")
    return runtime.sysdb.list_application_versions(application_name or runtime.app_name)


def get_latest_application_version(
    reach: Reach, *, application_name: str | None = None
) -> Coroutine[Any, Any, ApplicationVersion]:
    """The application's latest version (the one that runs version-less work);
    :class:`~dbos_trio.DBOSException` if it registered none. A face of no application
    given no name answers the newest version of any application, as dbos 3.4's client."""
    validate.optional_text(application_name, "application_name")
    runtime = reach.runtime("get_latest_application_version")
    return versions.latest(runtime.sysdb, application_name or runtime.app_name)


def set_latest_application_version(
    reach: Reach, version: str, *, application_name: str | None = None
) -> Coroutine[Any, Any, None]:
    """Make ``version`` the application's latest (stamp it now): promote, or roll back.
    A version no application registered, or another application's, raises
    :class:`~dbos_trio.DBOSException` and changes nothing. A face of no application given
    no name acts for the application that registered ``version`` (as dbos 3.4's client,
    which leaves the owner as it is); an unclaimed version needs a name."""
    validate.text(version, "version")
    validate.optional_text(application_name, "application_name")
    runtime = reach.runtime("set_latest_application_version")
    name = application_name or runtime.app_name
    if name is None:
        return _set_latest_for_owner(runtime, version)
    return versions.set_latest(runtime.sysdb, version, name, runtime.clock.now_ms())


async def _set_latest_for_owner(runtime: Runtime, version: str) -> None:
    owners = [
        v.application_name
        for v in await runtime.sysdb.list_application_versions(None)
        if v.version_name == version
    ]
    if not owners:
        raise DBOSException(
            f"application version {version!r} is not registered: a version exists once an "
            "executor running it has launched"
        )
    owner = owners[0]
    if owner is None:
        raise DBOSException(
            f"application version {version!r} belongs to no application: promoting it "
            "claims it, so pass application_name (or open the client with app_name)"
        )
    await versions.set_latest(runtime.sysdb, version, owner, runtime.clock.now_ms())


def recover_executor(
    reach: Reach,
    executor_id: str,
    *,
    application_version: str | None = None,
    application_name: str | None = None,
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
) -> Coroutine[Any, Any, list[str]]:
    """Re-enqueue ``executor_id``'s PENDING rows of the application (and unclaimed ones;
    of ``application_version`` only, or every version) not stamped within three
    ``heartbeat_interval`` s; the ids moved. ``DBOS`` uses its own application and
    heartbeat interval (the arguments are for a client) and wakes its queue workers."""
    validate.text(executor_id, "executor_id")
    validate.optional_text(application_version, "application_version")
    validate.optional_text(application_name, "application_name")
    validate.seconds(heartbeat_interval, "heartbeat_interval", positive=True)
    runtime = reach.runtime("recover_executor")
    if isinstance(runtime, Executor):
        return adoption.recover_executor(
            runtime, executor_id, application_version=application_version
        )
    return adoption.recover(
        runtime,
        executor_id,
        application_name=_one_application(runtime, application_name, "recover_executor"),
        application_version=application_version,
        live_window=window_ms(heartbeat_interval),
    )


def active_workflow_counts(
    reach: Reach, *, application_name: str | None = None
) -> Coroutine[Any, Any, list[ActiveCount]]:
    """PENDING/ENQUEUED/DELAYED rows counted by version, status, executor and name (the
    application's and unclaimed ones; every application's for a face of none)."""
    validate.optional_text(application_name, "application_name")
    runtime = reach.runtime("active_workflow_counts")
    return runtime.sysdb.active_counts(application_name or runtime.app_name)


def diagnose(
    reach: Reach,
    *,
    application_name: str | None = None,
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
) -> Coroutine[Any, Any, Diagnosis]:
    """Work no live executor will run (PENDING rows of silent executors, rows pinned to
    versions nobody runs, names nobody registers), each finding with its fix; for one
    application (and unclaimed rows), or every one when None. Reads only."""
    validate.optional_text(application_name, "application_name")
    validate.seconds(heartbeat_interval, "heartbeat_interval", positive=True)
    runtime = reach.runtime("diagnose")
    return doctor.diagnose(runtime, application_name, window_ms=window_ms(heartbeat_interval))


def check_rename(
    old_name: str | None, new_name: str, *, adopt_unclaimed_rows: bool, batch_size: int
) -> None:
    """Refuse a rename that names nothing to move, an invalid or unchanged name, or a
    batch size that is not a positive integer, before anything connects."""
    rename.check_rename(
        old_name, new_name, adopt_unclaimed=adopt_unclaimed_rows, batch_size=batch_size
    )


def rename_application(
    reach: Reach,
    old_name: str | None,
    new_name: str,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    adopt_unclaimed_rows: bool = False,
    progress: Progress | None = None,
) -> Coroutine[Any, Any, RenameCounts]:
    """Re-own ``old_name``'s rows (with ``adopt_unclaimed_rows``, unclaimed ones too) as
    ``new_name``: queues, schedules, versions and in-flight workflows in one transaction,
    then finished workflows and steps in batches, ``progress(table, moved)`` after each.
    Stop the application first; an interrupted rename is finished by running it again."""
    check_rename(
        old_name, new_name, adopt_unclaimed_rows=adopt_unclaimed_rows, batch_size=batch_size
    )
    runtime = reach.runtime("rename_application")
    return rename.rename_application(
        runtime,
        old_name,
        new_name,
        adopt_unclaimed=adopt_unclaimed_rows,
        batch_size=batch_size,
        progress=progress,
    )
