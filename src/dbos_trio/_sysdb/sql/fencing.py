"""Fencing what the system database does not write itself: a datasource transaction's
commit, and a durable sleep's waking (the one wait no fenced write follows).

Invariant: a write made elsewhere on behalf of a running workflow (the application
database's transaction and its checkpoint row) commits only after this execution was seen
to own the workflow *while already holding* what a later owner would need, so a stale
execution either sees it lost the workflow, or the new owner waits for it and then finds
its row. One read, no lock on the system database.
"""

from __future__ import annotations

from dbos_trio._sysdb.sql.base import SQLBackendBase


class FencingOperations(SQLBackendBase):
    async def check_owner(self, workflow_id: str, owner_xid: str) -> None:
        if not await self._exists(
            "owns_workflow", {"workflow_id": workflow_id, "owner_xid": owner_xid}
        ):
            await self._raise_lost_ownership(workflow_id, owner_xid)
