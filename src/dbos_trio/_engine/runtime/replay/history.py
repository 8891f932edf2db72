"""A recorded workflow as a replay needs it: its row (with inputs) and its checkpoints.

Invariant: a history is a copy, read once before any replay (from a system database or an
exported bundle), so a replay reads nothing and a database is never held while code runs.
"""

from __future__ import annotations

import attrs

from dbos_trio._sysdb.records import RecordedStep, WorkflowRow


@attrs.frozen(kw_only=True)
class RecordedHistory:
    """One workflow's row and its checkpoints (``operation_outputs``), by step id."""

    row: WorkflowRow
    steps: tuple[RecordedStep, ...]

    @property
    def workflow_id(self) -> str:
        """The recorded workflow's id."""
        return self.row.workflow_id

    def by_id(self) -> dict[int, RecordedStep]:
        """The checkpoints by step id."""
        return {step.function_id: step for step in self.steps}
