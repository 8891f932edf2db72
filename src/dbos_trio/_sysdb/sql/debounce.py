"""Debouncing: push a debounced DELAYED workflow back, or say who holds its key.

Invariants, and why:

* The row shapes and the algorithm are the official SDK's (deduplication id
  ``{workflow}-{key}`` on the target queue, ``is_debounced``, the deadline capping every
  push), so a bounce from either SDK finds — and extends — a workflow the other created.
* A bounce is one transaction: the delay, the serialization and the inputs of the pushed
  workflow change together, so the workflow runs with exactly one bounce's arguments.
* From a workflow body the bounce is fenced by the caller's owner token and recorded as
  its ``DBOS.debounce_delayed_workflow`` checkpoint in the same transaction: a replay gets
  the recorded answer and never bounces twice, and a stale execution bounces nothing. If
  the checkpoint is there already (an earlier attempt committed, its reply lost), it is
  the answer.
* The checkpoint is stored as portable JSON with the official SDK's field names, a record
  format of its own rather than an application payload, so any SDK can replay it.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.records import Bounce, BounceResult, Caller
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Transaction


class _Lost(Exception):
    """The caller no longer owns its workflow (raised out of the transaction, mapped below)."""


class DebounceOperations(SQLBackendBase):
    async def bounce(self, bounce: Bounce, caller: Caller | None) -> BounceResult:
        params: dict[str, Any] = {
            "workflow_name": bounce.workflow_name,
            "queue_name": bounce.queue_name,
            "deduplication_id": bounce.deduplication_id,
            "delay_until": bounce.delay_until_epoch_ms,
            "serialization": bounce.serialization,
            "application_name": bounce.application_name,
            "now": bounce.now_ms,
            "inputs": bounce.inputs,
        }
        if caller is not None:
            params.update(
                workflow_id=caller.workflow_id,
                owner_xid=caller.owner_xid,
                function_id=caller.function_id,
                started_at=caller.started_at_ms,
            )

        async def run(tx: Transaction) -> BounceResult:
            if caller is not None:
                fence = await tx.one("bounce_fence", params)
                if fence is None or not fence[0]:
                    raise _Lost
                if fence[1] is not None:
                    return BounceResult.from_json(fence[1])
            bounced = await tx.one("bounce_delayed", params)
            if bounced is not None:
                await tx.run("replace_inputs", {**params, "workflow_id": bounced[0]})
                result = BounceResult(bounced_workflow_id=bounced[0])
            else:
                holder = await tx.one("deduplication_holder", params)
                result = (
                    BounceResult(bounced_workflow_id=None)
                    if holder is None
                    else BounceResult(
                        bounced_workflow_id=None,
                        holder_workflow_id=holder[0],
                        holder_is_debounced=bool(holder[1]),
                        holder_workflow_name=holder[2],
                        holder_application_name=holder[3],
                    )
                )
            if caller is not None and caller.record:
                await tx.run("record_bounce", {**params, "output": result.to_json()})
            return result

        try:
            return await self._db.transaction(run)
        except _Lost:
            assert caller is not None
            await self._raise_lost_ownership(caller.workflow_id, caller.owner_xid)
