"""Stranded work, found from the rows alone (``dbos-trio doctor``).

Work is stranded when nothing will ever run it unless someone acts. From the database a
client can see three kinds, each with its fix:

* **PENDING under a silent executor** — none of the executor's PENDING rows was stamped
  within the liveness window (executors stamp the rows they run: :mod:`.adoption`), so
  it is most likely gone: ``dbos-trio workflow recover --executor ID``.
* **Rows pinned to a version no live executor runs** — rows of a version other than the
  latest, and no PENDING row of that version stamped within the window (an idle executor
  of that version stamps nothing, so this is "no executor of it seen", said as such):
  pin the version on an executor, fork onto a running version, or ``set-latest``.
* **Workflow names never run anywhere** — ENQUEUED rows of a name no row of which ever
  left the queue: likely misspelled in an enqueue; cancel and enqueue the right name.

And one risk to work not yet lost: **acknowledged commits a failover can lose** — a
PostgreSQL server with an asynchronous standby (or a synchronous one that this
connection's ``synchronous_commit`` does not wait for): promoting it loses the enqueues,
sends and outcomes it had not received; ``Config(synchronous_commit="remote_apply")`` with
the standby in ``synchronous_standby_names`` closes the gap.

Reads only. The findings are plain records, so the CLI prints them as a table or JSON.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import attrs

from dbos_trio._core.statuses import ENQUEUED, PENDING
from dbos_trio._sysdb.protocol import SystemDatabase
from dbos_trio._sysdb.records import (
    ActiveCount,
    ApplicationVersion,
    ReplicationState,
    WorkflowFilters,
)

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime


@attrs.frozen(kw_only=True)
class Finding:
    """One kind of stranded work: what, how many, and what to do about it."""

    kind: str  # "silent-executor", "unrun-version", "unknown-name"
    subject: str  # the executor id, version or workflow name
    count: int
    detail: str
    fix: str


@attrs.frozen(kw_only=True)
class Diagnosis:
    application_name: str | None
    latest_version: str | None
    versions: list[ApplicationVersion]
    findings: list[Finding]
    replication: ReplicationState | None = None


def silent_executors(
    counts: list[ActiveCount], now_ms: int, window_ms: int, app_flag: str
) -> list[Finding]:
    newest: dict[str, int] = {}
    pending: dict[str, int] = defaultdict(int)
    for c in counts:
        if c.status == PENDING and c.executor_id is not None:
            pending[c.executor_id] += c.count
            newest[c.executor_id] = max(newest.get(c.executor_id, 0), c.last_updated_ms or 0)
    return [
        Finding(
            kind="silent-executor",
            subject=executor_id,
            count=pending[executor_id],
            detail=f"PENDING, last stamped {(now_ms - stamped) / 1000:.0f} s ago",
            fix=f"dbos-trio workflow recover --executor {executor_id}{app_flag}",
        )
        for executor_id, stamped in sorted(newest.items())
        if stamped < now_ms - window_ms
    ]


def unrun_versions(
    counts: list[ActiveCount], latest: str | None, now_ms: int, window_ms: int
) -> list[Finding]:
    live: set[str | None] = {
        c.application_version
        for c in counts
        if c.status == PENDING and (c.last_updated_ms or 0) >= now_ms - window_ms
    }
    waiting: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for c in counts:
        version = c.application_version
        if version is not None and version != latest and version not in live:
            waiting[version][c.status] += c.count
    return [
        Finding(
            kind="unrun-version",
            subject=version,
            count=sum(by_status.values()),
            detail=", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
            + f"; no executor of {version} seen running (latest is {latest})",
            fix=(
                f"run an executor with app_version={version} (DBOS__APPVERSION), or fork "
                f"each onto a running version (dbos-trio workflow fork ID "
                f"--application-version V), or dbos-trio version set-latest {version}"
            ),
        )
        for version, by_status in sorted(waiting.items())
    ]


async def _with_application(sysdb: SystemDatabase, finding: Finding) -> Finding:
    rows = await sysdb.list_workflows(
        WorkflowFilters(executor_ids=(finding.subject,), statuses=(PENDING,), limit=1)
    )
    name = rows[0].application_name if rows else None
    if not name:
        return finding
    return attrs.evolve(finding, fix=f"{finding.fix} -a {name}")


def replication_risks(state: ReplicationState | None) -> list[Finding]:
    """Standbys a failover to which could lose acknowledged commits (pure)."""
    if state is None:
        return []
    waits_for_standby = state.synchronous_commit in ("on", "remote_write", "remote_apply")
    at_risk = [
        name
        for name, sync_state in state.standbys
        if sync_state in ("async", "potential") or not waits_for_standby
    ]
    if not at_risk:
        return []
    names = state.synchronous_standby_names or "''"
    return [
        Finding(
            kind="replication-risk",
            subject=", ".join(at_risk),
            count=len(at_risk),
            detail=(
                f"standby(s) not waited for (synchronous_commit={state.synchronous_commit}, "
                f"synchronous_standby_names={names}): a "
                "failover to one loses the commits it had not received — acknowledged "
                "enqueues, sends and outcomes"
            ),
            fix=(
                "name the standby in synchronous_standby_names on the server and launch with "
                "Config(synchronous_commit='remote_apply'), or accept the window "
                "(docs/concepts/executors.md)"
            ),
        )
    ]


async def diagnose(runtime: Runtime, application_name: str | None, *, window_ms: int) -> Diagnosis:
    """Every finding for ``application_name`` (and unclaimed rows; every application's
    when None). Raises what the reads raise."""
    sysdb = runtime.sysdb
    now = runtime.clock.now_ms()
    found_versions = await sysdb.list_application_versions(application_name)
    latest = found_versions[0].version_name if found_versions else None
    counts = await sysdb.active_counts(application_name)
    app_flag = f" -a {application_name}" if application_name else ""
    findings = silent_executors(counts, now, window_ms, app_flag)
    if not application_name:
        # Every application's rows: each fix must name the silent executor's application,
        # or the printed command would not run.
        findings = [await _with_application(sysdb, finding) for finding in findings]
    findings += unrun_versions(counts, latest, now, window_ms)
    enqueued: dict[str, int] = defaultdict(int)
    for c in counts:
        if c.status == ENQUEUED and c.name is not None:
            enqueued[c.name] += c.count
    ever_run = await sysdb.names_ever_run(sorted(enqueued))
    findings += [
        Finding(
            kind="unknown-name",
            subject=name,
            count=n,
            detail="ENQUEUED, and no workflow of this name ever ran: misspelled?",
            fix="cancel them (dbos-trio workflow cancel ID) and enqueue the registered name",
        )
        for name, n in sorted(enqueued.items())
        if name not in ever_run
    ]
    replication = await sysdb.replication_state()
    findings += replication_risks(replication)
    return Diagnosis(
        application_name=application_name,
        latest_version=latest,
        versions=found_versions,
        findings=findings,
        replication=replication,
    )
