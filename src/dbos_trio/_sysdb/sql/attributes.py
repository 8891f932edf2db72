"""Workflow attributes: replacing or merging a workflow's user attributes.

One statement on either backend, so a merge is atomic against a concurrent one (each
merges into the object the other left, never into a stale copy read beforehand).
"""

from __future__ import annotations

from dbos_trio._sysdb.sql.base import SQLBackendBase


class AttributeOperations(SQLBackendBase):
    async def update_workflow_attributes(
        self, workflow_id: str, attributes: str | None, *, merge: bool, now_ms: int
    ) -> bool:
        row = await self._db.one(
            "update_workflow_attributes",
            {
                "workflow_id": workflow_id,
                "attributes": attributes,
                "merge": merge,
                "now": now_ms,
            },
        )
        return row is not None
