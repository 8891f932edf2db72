"""Exporting a workflow's rows and importing them elsewhere (``dbos-trio workflow
export`` / ``import``, and ``dbos-trio check --bundle``).

Invariant: rows cross as stored. An export is a set of plain reads of one workflow's rows
(its status row with its inputs and outcome, checkpoints, events and their history, stream
values, the messages sent to it), every column by name and every payload as the text the
database holds; an import writes those same values back, all of a bundle in one
transaction, so payloads stay byte for byte what their writer stored and an import
interrupted by an error or a cancellation leaves nothing half written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import attrs

Columns = dict[str, Any]


@attrs.frozen(kw_only=True)
class WorkflowRows:
    """Every row of one workflow, each as ``{column: value}`` (JSON-ready: text, numbers,
    booleans, None; ``attributes`` as JSON text)."""

    status: Columns
    input: Columns | None  # its workflow_input row (None: inputs in the legacy column)
    output: Columns | None  # its workflow_output row
    steps: list[Columns]
    events: list[Columns]
    event_history: list[Columns]
    streams: list[Columns]
    notifications: list[Columns]

    @property
    def workflow_id(self) -> str:
        return str(self.status["workflow_uuid"])


class BundleStore(Protocol):
    """Reads for an export, inserts for an import (sql/bundles.py)."""

    async def export_workflow_rows(self, workflow_id: str) -> WorkflowRows | None:
        """Every row of the workflow, or None if there is no such workflow."""

    async def import_workflow_rows(
        self, workflows: Sequence[WorkflowRows], *, overwrite: bool
    ) -> list[str]:
        """Insert every row of ``workflows`` in one transaction; the ids written. An id
        that exists raises :class:`~dbos_trio.errors.DBOSException` naming it and writes
        nothing, unless ``overwrite``: its rows are then deleted first, in the same
        transaction."""
