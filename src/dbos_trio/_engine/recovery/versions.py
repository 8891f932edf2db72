"""Application versions, and work a version change may strand — never silently.

A row runs only on an executor of its ``application_version`` (a version-less queued row:
on the latest version), and only on one that registers its workflow name. The default
version is a hash of the workflows' source, so editing a comment between a crash and the
re-run strands the old PENDING rows under the old version: correct (old checkpoints must
not replay into new code), but a silent hang is not. So:

* **At launch**, one census of this application's PENDING/ENQUEUED/DELAYED rows pinned
  to other versions logs one WARNING naming the versions, the counts and the fixes.
* **A waiter** (``get_result``, a direct call on an existing id) on a row that no live
  executor of this application can run — its version neither ours nor the latest, its
  name not registered here, or PENDING under an executor that stopped stamping it — logs
  one WARNING per workflow id, with the fix.
* **Every census interval**, an ENQUEUED row of this executor's version (or version-less,
  on the latest) naming a workflow it does not register logs one WARNING per name.

Every check reads, never writes, and a failed read is logged and skipped: a diagnostic
must never stop the work it diagnoses.
"""

from __future__ import annotations

import logging
import weakref
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

import trio

from dbos_trio._core.statuses import DELAYED, ENQUEUED, PENDING
from dbos_trio._engine.recovery.adoption import live_window_ms
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.records import ActiveCount, ApplicationVersion
from dbos_trio.errors import DBOSException, SystemDatabaseError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor, Runtime

logger = logging.getLogger("dbos_trio.versions")

ACTIVE = (PENDING, ENQUEUED, DELAYED)
CENSUS_INTERVAL_SECONDS = 60.0


async def list_versions(sysdb: SystemDatabase, application_name: str) -> list[ApplicationVersion]:
    return await sysdb.list_application_versions(application_name)


async def latest(sysdb: SystemDatabase, application_name: str | None) -> ApplicationVersion:
    """The application's newest version (of every application's, for None)."""
    found = await sysdb.list_application_versions(application_name)
    if not found:
        of = "" if application_name is None else f" of {application_name!r}"
        raise DBOSException(f"no application versions{of} are registered")
    return found[0]


async def set_latest(
    sysdb: SystemDatabase, version: str, application_name: str, now_ms: int
) -> None:
    await sysdb.set_latest_version(version, application_name, now_ms)
    logger.info("application version %s is now the latest of %s", version, application_name)


# --- at launch -------------------------------------------------------------------------


def pinned_elsewhere(counts: list[ActiveCount], version: str) -> dict[str, dict[str, int]]:
    """{other version: {status: count}} of the rows still to run under other versions."""
    found: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for c in counts:
        if c.application_version is not None and c.application_version != version:
            found[c.application_version][c.status] += c.count
    return {v: dict(by_status) for v, by_status in sorted(found.items())}


def describe_pinned(pinned: dict[str, dict[str, int]]) -> str:
    return "; ".join(
        f"{version}: " + ", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
        for version, by_status in pinned.items()
    )


async def warn_pinned_elsewhere(executor: Executor) -> dict[str, dict[str, int]]:
    """The launch census: one WARNING if rows of this application wait under other
    versions (they never run here), and one per unknown ENQUEUED workflow name (see
    :func:`census`). Returns the rows pinned elsewhere."""
    try:
        counts = await executor.sysdb.active_counts(executor.app_name)
    except SystemDatabaseError as error:
        logger.warning("cannot count workflows pinned to other versions: %s", error)
        return {}
    warn_unknown_names(executor, counts)
    pinned = pinned_elsewhere(counts, executor.app_version)
    if pinned:
        total = sum(sum(by_status.values()) for by_status in pinned.values())
        logger.warning(
            "%d workflow(s) of %s wait under application version(s) other than this one "
            "(%s), and this executor (version %s) will not run them: %s. If this code can "
            "run them, pin the version (Config(app_version=...) or DBOS__APPVERSION) to "
            "theirs; or fork them onto this version (dbos-trio workflow fork ID "
            "--application-version %s); or, for ENQUEUED work, make their version the "
            "latest (dbos-trio version set-latest VERSION) on executors running it. "
            "Listed by: dbos-trio doctor",
            total,
            executor.app_name,
            ", ".join(pinned),
            executor.app_version,
            describe_pinned(pinned),
            executor.app_version,
        )
    return pinned


# --- waiters ---------------------------------------------------------------------------

# Per runtime (an executor), the workflow ids already warned about.
_warned_ids: weakref.WeakKeyDictionary[Runtime, set[str]] = weakref.WeakKeyDictionary()


async def warn_if_stranded(runtime: Runtime, workflow_id: str) -> None:
    """Once per workflow id per process: if nothing this executor knows of can run the
    row being waited on, say why and how to fix it (WARNING). Reads only; a failed read
    is skipped."""
    warned = _warned_ids.setdefault(runtime, set())
    if workflow_id in warned or workflow_id in runtime.local:
        return
    app_version = getattr(runtime, "app_version", None)
    if app_version is None:
        return  # a client runs nothing and knows no version of its own
    executor: Executor = runtime  # type: ignore[assignment]
    try:
        row = await executor.sysdb.get_workflow(workflow_id)
        if row is None or row.status not in ACTIVE:
            return
        newest = await executor.sysdb.latest_version(executor.app_name)
    except Exception as error:  # a diagnosis never breaks the wait it diagnoses
        logger.debug("cannot tell whether workflow %s can run: %r", workflow_id, error)
        return
    problems: list[str] = []
    version = row.application_version
    if version is not None and version not in (app_version, newest):
        problems.append(
            f"its application version {version!r} is neither this executor's "
            f"({app_version!r}) nor the latest ({newest!r}), so only an executor running "
            f"{version!r} runs it: pin Config(app_version={version!r}) (or DBOS__APPVERSION) "
            f"if this code can, or fork it onto this version (dbos-trio workflow fork "
            f"{workflow_id} --application-version {app_version})"
        )
    if row.name is not None and row.name not in executor.workflow_names:
        problems.append(
            f"its workflow {row.name!r} is not registered in this process (misspelled, "
            "or renamed?): only an executor registering it runs it"
        )
    window = live_window_ms(executor)
    if (
        row.status == PENDING
        and row.executor_id not in (None, executor.executor_id)
        and row.updated_at is not None
        and row.updated_at < executor.clock.now_ms() - window
    ):
        problems.append(
            f"it is PENDING under executor {row.executor_id!r}, which has not stamped it "
            f"for over {window / 1000:g} s: if that executor is gone, run "
            f"dbos-trio workflow recover --executor {row.executor_id} (or "
            "dbos.recover_executor)"
        )
    if problems:
        warned.add(workflow_id)
        logger.warning(
            "waiting on workflow %s (%s), which may never run: %s",
            workflow_id,
            row.status,
            "; and ".join(problems),
        )


# --- unknown names, every census interval ----------------------------------------------


def unknown_names(counts: list[ActiveCount], executor: Executor) -> dict[str, int]:
    """ENQUEUED rows this executor would claim but for their name: {name: count}."""
    registered = set(executor.workflow_names)
    found: dict[str, int] = defaultdict(int)
    for c in counts:
        runs_version = c.application_version == executor.app_version or (
            c.application_version is None and executor.is_latest_version
        )
        if c.status == ENQUEUED and runs_version and c.name not in registered:
            found[str(c.name)] += c.count
    return dict(found)


_warned_names: weakref.WeakKeyDictionary[Executor, set[str]] = weakref.WeakKeyDictionary()


def note_warned_names(executor: Executor, names: Iterable[str]) -> None:
    """Names another warning already reported (recovery's, at launch): not repeated."""
    _warned_names.setdefault(executor, set()).update(names)


def warn_unknown_names(executor: Executor, counts: list[ActiveCount]) -> None:
    """One WARNING per workflow name newly found ENQUEUED for this version but registered
    nowhere in this process."""
    warned = _warned_names.setdefault(executor, set())
    for name, count in sorted(unknown_names(counts, executor).items()):
        if name in warned:
            continue
        warned.add(name)
        logger.warning(
            "%d ENQUEUED workflow(s) name %r, which this executor does not register "
            "(registered: %s): they wait for an executor that does. A misspelled name in "
            "an enqueue never runs: cancel them (dbos-trio workflow cancel ID) and enqueue "
            "the right name",
            count,
            name,
            ", ".join(executor.workflow_names) or "none",
        )


async def census(
    executor: Executor,
    *,
    interval: float = CENSUS_INTERVAL_SECONDS,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """After launch's census, every ``interval`` (Trio clock), warn about unknown names
    again (:func:`warn_unknown_names`). Cancellation stops it between passes."""
    task_status.started()
    while True:
        await trio.sleep(interval)
        try:
            counts = await executor.sysdb.active_counts(executor.app_name)
        except SystemDatabaseError as error:
            logger.warning("workflow census failed (trying again next interval): %s", error)
        else:
            warn_unknown_names(executor, counts)
