"""The doctor's findings from row counts alone (pure: no database)."""

from __future__ import annotations

from dbos_trio._engine.recovery.doctor import replication_risks, silent_executors, unrun_versions
from dbos_trio._sysdb.records import ActiveCount, ReplicationState

NOW = 1_000_000
WINDOW = 30_000


def count(
    version: str | None, status: str, executor: str | None, updated: int, n: int = 1
) -> ActiveCount:
    return ActiveCount(
        application_version=version,
        status=status,
        executor_id=executor,
        name="job",
        count=n,
        last_updated_ms=updated,
    )


def test_an_executor_is_silent_only_if_none_of_its_pending_rows_was_stamped_recently() -> None:
    counts = [
        count("v1", "PENDING", "dead", NOW - 60_000, n=3),
        count("v1", "PENDING", "alive", NOW - 60_000),
        count("v1", "PENDING", "alive", NOW - 1_000),  # one fresh stamp: alive
        count("v1", "ENQUEUED", "queued-only", NOW - 90_000),  # nothing PENDING: no owner
    ]
    (finding,) = silent_executors(counts, NOW, WINDOW, " -a app")
    assert (finding.subject, finding.count) == ("dead", 3)
    assert finding.fix == "dbos-trio workflow recover --executor dead -a app"


def test_a_version_is_unrun_when_it_is_not_latest_and_nothing_of_it_was_stamped() -> None:
    counts = [
        count("old", "PENDING", "local", NOW - 60_000),
        count("old", "ENQUEUED", None, NOW - 60_000, n=2),
        count("rolling", "PENDING", "peer", NOW - 1_000),  # an executor of it runs
        count("new", "ENQUEUED", None, NOW - 60_000),  # the latest: it runs
        count(None, "ENQUEUED", None, NOW - 60_000),  # version-less: the latest runs it
    ]
    (finding,) = unrun_versions(counts, "new", NOW, WINDOW)
    assert (finding.subject, finding.count) == ("old", 3)
    assert finding.detail.startswith("2 ENQUEUED, 1 PENDING")
    assert "set-latest old" in finding.fix


def test_an_asynchronous_standby_is_a_risk_to_acknowledged_commits() -> None:
    asynchronous = ReplicationState(
        synchronous_commit="on", synchronous_standby_names="", standbys=(("replica", "async"),)
    )
    [risk] = replication_risks(asynchronous)
    assert risk.kind == "replication-risk" and risk.subject == "replica"
    assert "synchronous_commit='remote_apply'" in risk.fix
    # A synchronous standby, waited for: no risk.
    waited = ReplicationState(
        synchronous_commit="remote_apply",
        synchronous_standby_names="replica",
        standbys=(("replica", "sync"),),
    )
    assert replication_risks(waited) == []
    # A synchronous standby this session does not wait for (synchronous_commit=local).
    unwaited = ReplicationState(
        synchronous_commit="local",
        synchronous_standby_names="replica",
        standbys=(("replica", "sync"),),
    )
    assert [r.subject for r in replication_risks(unwaited)] == ["replica"]
    # A single server, or SQLite: nothing to say.
    single = ReplicationState(synchronous_commit="on", synchronous_standby_names="", standbys=())
    assert replication_risks(single) == []
    assert replication_risks(None) == []
