"""Many new workflow rows alike but for their id and inputs: a bulk enqueue's plain calls.

Invariant, and why: every row of a :class:`SimilarWorkflows` is its ``template`` with
only ``workflow_id`` and ``inputs`` replaced, and the template's ``creator_xid`` is the
creating insert's token for all of them (it tells a row this insert made from one that
existed, and the ids are distinct). Carried this way a batch of thousands is one shared
set of column values plus two strings a row, instead of a full row object and a
thirty-key parameter set per row: on PostgreSQL the shared values are sent once and each
row as a two-key JSON object (the server parses half as much, the client builds next to
nothing per row). A record of the protocol, as those of records.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from dbos_trio._sysdb.records import InitResult, NewWorkflow


@attrs.frozen
class SimilarWorkflows:
    """Rows to create: ``template`` with each ``(workflow_id, inputs)`` pair in turn."""

    template: NewWorkflow
    workflow_ids: Sequence[str]
    inputs: Sequence[str]

    def __attrs_post_init__(self) -> None:
        if len(self.workflow_ids) != len(self.inputs):
            raise ValueError("SimilarWorkflows needs one inputs text per workflow id")

    def __len__(self) -> int:
        return len(self.workflow_ids)

    def chunk(self, start: int, stop: int) -> SimilarWorkflows:
        """Rows ``start`` to ``stop`` (exclusive), same template."""
        return SimilarWorkflows(
            self.template, self.workflow_ids[start:stop], self.inputs[start:stop]
        )

    def expanded(self) -> list[NewWorkflow]:
        """Each row as a full :class:`NewWorkflow` (for the row-by-row paths)."""
        return [
            attrs.evolve(self.template, workflow_id=workflow_id, inputs=inputs)
            for workflow_id, inputs in zip(self.workflow_ids, self.inputs, strict=True)
        ]

    def created(self) -> InitResult:
        """What ``init_workflow`` answers for each row this insert made (one object, shared:
        the answer is the same for every row)."""
        template = self.template
        return InitResult(
            created=True,
            status=template.status,
            name=template.name,
            class_name=template.class_name,
            config_name=template.config_name,
            queue_name=template.queue_name,
            serialization=template.serialization,
            deadline_epoch_ms=template.deadline_epoch_ms,
        )
