"""Attributes and rewind, as methods of :class:`~dbos_trio.Client` (the same engine
calls as ``DBOS``'s, never checkpointed)."""

from __future__ import annotations

from typing import Any

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core import validate
from dbos_trio._engine.admin import edit as admin
from dbos_trio.errors import DBOSException


class ClientAdmin(ClientBase):
    async def update_workflow_attributes(
        self, workflow_id: str, attributes: dict[str, Any] | None, *, merge: bool = False
    ) -> None:
        """Replace the workflow's attributes (None clears them) or, with ``merge=True``,
        set the given top-level keys and keep the others; a missing workflow is left
        alone. Bad values raise before anything is written."""
        validate.text(workflow_id, "workflow_id")
        validate.boolean(merge, "merge")
        if merge and attributes is None:
            raise DBOSException("Cannot merge None into workflow attributes")
        encoded = attributes_rules.optional(attributes, "attributes")
        runtime = self._require("update_workflow_attributes")
        await admin.update_workflow_attributes(runtime, workflow_id, encoded, merge=merge)

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
        validate.text(workflow_id, "workflow_id")
        step = 1 if start_step is None else start_step
        validate.integer(step, "start_step", low=1, high=validate.INT32_MAX)
        validate.optional_text(application_version, "application_version")
        validate.optional_text(queue_name, "queue_name")
        validate.optional_text(queue_partition_key, "queue_partition_key")
        runtime = self._require("rewind_workflow")
        await admin.rewind_workflow(
            runtime,
            workflow_id,
            step,
            application_version=application_version,
            queue_name=queue_name,
            queue_partition_key=queue_partition_key,
        )
        return self._handle(workflow_id)
