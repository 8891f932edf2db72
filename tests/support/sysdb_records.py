"""Records for driving a system database through the protocol directly, as the engine would.

Shared by the conformance tests (``tests/sysdb/test_conformance.py``, on both backends) and
the SQLite-only ones. Times are made up (epoch milliseconds from :data:`T0`), as the
engine's clock would pass them; every row belongs to application :data:`APP`.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.records import Caller, ClaimRequest, NewWorkflow, ParentStep, RecordedStep

APP = "app"
T0 = 1_000_000


def workflow(workflow_id: str, **fields: Any) -> NewWorkflow:
    """A directly started (PENDING, owned by ``owner-<id>``) workflow unless overridden."""
    values: dict[str, Any] = {
        "workflow_id": workflow_id,
        "status": "PENDING",
        "name": "wf",
        "class_name": None,
        "config_name": None,
        "inputs": f"inputs-of-{workflow_id}",
        "serialization": "py_pickle",
        "creator_xid": f"creator-{workflow_id}",
        "owner_xid": f"owner-{workflow_id}",
        "recovery_attempts": 1,
        "created_at_ms": T0,
        "executor_id": "exec",
        "application_version": "v1",
        "application_name": APP,
    }
    values.update(fields)
    return NewWorkflow(**values)


def queued(workflow_id: str, queue: str = "q", **fields: Any) -> NewWorkflow:
    defaults: dict[str, Any] = {
        "status": "ENQUEUED",
        "owner_xid": None,
        "recovery_attempts": 0,
        "queue_name": queue,
    }
    defaults.update(fields)
    return workflow(workflow_id, **defaults)


def claim_request(queue: str = "q", **fields: Any) -> ClaimRequest:
    values: dict[str, Any] = {
        "queue_name": queue,
        "partition_key": None,
        "owner_xid": "claimer",
        "executor_id": "exec-2",
        "application_version": "v1",
        "application_name": APP,
        "runs_latest_version": True,
        "workflow_names": ("wf",),
        "now_ms": T0 + 1000,
        "local_budget": None,
        "global_concurrency": None,
        "rate_limit_max": None,
        "rate_limit_period_ms": None,
        "partition_concurrency": None,
        "partition_rate_limit_max": None,
        "partition_rate_limit_period_ms": None,
        "consistent": False,
        "rate_limited": False,
    }
    values.update(fields)
    return ClaimRequest(**values)


def step(function_id: int, name: str = "step", output: str | None = "out") -> RecordedStep:
    return RecordedStep(
        function_id=function_id,
        function_name=name,
        output=output,
        error=None,
        serialization="py_pickle",
        started_at_ms=T0,
        completed_at_ms=T0 + function_id,
    )


def caller(workflow_id: str, function_id: int, *, owner: str | None = None) -> Caller:
    return Caller(
        workflow_id=workflow_id,
        owner_xid=owner or f"owner-{workflow_id}",
        function_id=function_id,
        started_at_ms=T0,
        application_name=APP,
    )


def parent_step(function_id: int = 1, *, owner: str = "owner-p") -> ParentStep:
    return ParentStep(
        workflow_id="p",
        owner_xid=owner,
        function_id=function_id,
        function_name="child_wf",
        started_at_ms=T0,
        application_name=APP,
    )
