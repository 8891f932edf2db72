"""The verdicts of ``check`` (pure rules): which results fail, what each says."""

from __future__ import annotations

import pytest

from dbos_trio._core.replay import (
    COMPATIBLE,
    DIVERGED,
    NEW_CODE,
    UNDECODABLE,
    CheckReport,
    DurableCall,
    ReplayResult,
    diverged_message,
    kind_of,
)


def result(status: str, verdict: str, workflow_id: str = "w") -> ReplayResult:
    return ReplayResult(
        workflow_id=workflow_id,
        name="n",
        status=status,
        application_version="v1",
        verdict=verdict,
        message="m",
        recorded_calls=2,
        replayed_calls=1,
    )


@pytest.mark.parametrize(
    ("name", "child", "kind"),
    [
        ("charge", False, "step"),
        ("child_flow", True, "child"),
        ("DBOS.sleep", False, "sleep"),
        ("DBOS.recv", False, "recv"),
        ("DBOS.setEvent", False, "set_event"),
        ("DBOS.patch-fix", False, "patch"),
        ("DBOS.now", False, "determinism"),
        ("DBOS.cancelWorkflow", False, "operation"),
    ],
)
def test_each_recorded_name_has_its_kind(name: str, child: bool, kind: str) -> None:
    assert kind_of(name, child=child) == kind


@pytest.mark.parametrize("status", ["PENDING", "ENQUEUED", "DELAYED"])
def test_only_in_flight_work_that_cannot_replay_fails_the_check(status: str) -> None:
    assert result(status, DIVERGED).fails
    assert result(status, UNDECODABLE).fails
    assert not result(status, NEW_CODE).fails
    assert not result(status, COMPATIBLE).fails
    assert not result("SUCCESS", DIVERGED).fails
    assert not result("ERROR", UNDECODABLE).fails


def test_a_report_fails_with_a_summary_naming_the_count() -> None:
    report = CheckReport(
        results=(result("PENDING", DIVERGED, "a"), result("SUCCESS", DIVERGED, "b")),
        seconds=0.5,
    )
    assert not report.ok
    assert [r.workflow_id for r in report.failing] == ["a"]
    assert report.counts() == {DIVERGED: 2}
    assert "FAILED: 1 in-flight workflow(s) would not replay" in report.summary()
    assert report.to_json()["failing"] == 1
    assert CheckReport(results=(result("PENDING", NEW_CODE),)).ok


def test_a_divergence_names_both_calls_and_where_the_new_one_is() -> None:
    recorded = DurableCall(function_id=3, kind="step", name="ship")
    new = DurableCall(function_id=3, kind="step", name="bill", where="app.py:12")
    text = diverged_message(recorded, new)
    assert text.startswith("diverged at function id 3: recorded ship, new code calls bill")
    assert "(app.py:12)" in text and "dbos.patch()" in text
