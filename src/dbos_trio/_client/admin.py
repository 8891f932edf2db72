"""Attributes and rewind, as methods of :class:`~dbos_trio.Client` (the shared operations
of :mod:`dbos_trio._ops.manage`, as ``DBOS``'s, never checkpointed)."""

from __future__ import annotations

from typing import Any

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._ops import manage


class ClientAdmin(ClientBase):
    async def update_workflow_attributes(
        self, workflow_id: str, attributes: dict[str, Any] | None, *, merge: bool = False
    ) -> None:
        """Replace the workflow's attributes (None clears them) or, with ``merge=True``,
        set the given top-level keys and keep the others; a missing workflow is left
        alone. Bad values raise before anything is written."""
        await manage.update_workflow_attributes(self._reach, workflow_id, attributes, merge=merge)

    async def rewind_workflow(
        self,
        workflow_id: str,
        *,
        start_step: int | None = None,
        application_version: str | None = None,
        queue_name: str | None = None,
        queue_partition_key: str | None = None,
    ) -> ClientWorkflowHandle[Any]:
        """Re-run a finished workflow under the same id from ``start_step`` (default 1);
        see :meth:`dbos_trio.DBOS.rewind_workflow`."""
        rewound = await manage.rewind_workflow(
            self._reach,
            workflow_id,
            start_step=start_step,
            application_version=application_version,
            queue_name=queue_name,
            queue_partition_key=queue_partition_key,
        )
        return self._handle(rewound)
