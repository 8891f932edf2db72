"""Renaming an application: its rows re-owned by a new name.

Invariants, and why:

* Queues, schedules, versions and the workflows still to run move in one transaction: an
  executor of the new name must never see work of its own whose version row (or queue)
  still belongs to the old name, or it would never run it.
* Finished workflows and their steps only scope listings, so they move afterwards in
  batches of whole key ranges (a workflow's steps never split across batches); each batch
  is its own transaction, and a re-run moves what is left.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.records import RenameBatch, RenameCore
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Transaction

# The tables a batch may move, by the name of their statements.
TABLES = {"workflows": "workflows", "steps": "steps"}


def _params(old_name: str | None, new_name: str, adopt_unclaimed: bool) -> dict[str, Any]:
    return {"old_name": old_name, "new_name": new_name, "adopt": 1 if adopt_unclaimed else 0}


class RenameOperations(SQLBackendBase):
    async def rename_application_core(
        self, old_name: str | None, new_name: str, *, adopt_unclaimed: bool
    ) -> RenameCore:
        params = _params(old_name, new_name, adopt_unclaimed)

        async def move(tx: Transaction) -> RenameCore:
            return RenameCore(
                queues=await tx.run("rename_queues", params),
                schedules=await tx.run("rename_schedules", params),
                versions=await tx.run("rename_versions", params),
                workflows=await tx.run("rename_in_flight", params),
            )

        return await self._db.transaction(move)

    async def rename_application_batch(
        self,
        table: str,
        old_name: str | None,
        new_name: str,
        *,
        adopt_unclaimed: bool,
        after: str,
        batch_size: int,
    ) -> RenameBatch:
        kind = TABLES[table]
        params = _params(old_name, new_name, adopt_unclaimed)
        params.update(after=after, offset=batch_size - 1)

        async def batch(tx: Transaction) -> RenameBatch:
            upper = await tx.one(f"rename_{kind}_upper", params)
            if upper is None:
                return RenameBatch(moved=await tx.run(f"rename_{kind}_rest", params), upper=None)
            moved = await tx.run(f"rename_{kind}_range", {**params, "upper": upper[0]})
            return RenameBatch(moved=moved, upper=str(upper[0]))

        return await self._db.transaction(batch)
