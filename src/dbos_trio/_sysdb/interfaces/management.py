"""Operator actions on workflows: cancel, resume, delete, delay, fork, rewind, change
attributes, time out, collect garbage, rename the application.

Invariant: each action is one statement or one transaction, so an action interrupted by an
error or a cancellation leaves nothing half done.
"""

from __future__ import annotations

from typing import Protocol

from dbos_trio._sysdb.records import RenameBatch, RenameCore


class ManagementStore(Protocol):
    """What operators (and the engine's timeouts and retention) do to workflows."""

    async def cancel_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        """Set CANCELLED on those not SUCCESS/ERROR, clearing owner, queue, dedup id."""

    async def sweep_timeouts(self, application_name: str, now_ms: int) -> list[str]:
        """Cancel expired workflows of the application; one executor at a time sweeps."""

    async def resume_workflows(
        self, workflow_ids: list[str], queue_name: str | None, now_ms: int
    ) -> list[str]: ...

    async def pause_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        """Set PAUSED on those PENDING, ENQUEUED or DELAYED (owner, queue, deadline and
        dedup id kept); the ids changed. Watchers elsewhere are told to look."""

    async def pause_own_workflow(self, workflow_id: str, owner_xid: str, now_ms: int) -> bool:
        """Set PAUSED on a PENDING workflow still owned by ``owner_xid``; whether it was."""

    async def unpause_workflows(self, workflow_ids: list[str], now_ms: int) -> list[str]:
        """PAUSED rows go back on their queue (or the internal one), ENQUEUED, or DELAYED
        if their delay has not passed (attempts reset, deadline re-armed at dequeue); the
        ids changed. Their queues' workers are woken."""

    async def delete_workflows(self, workflow_ids: list[str]) -> None: ...

    async def set_workflow_delay(
        self, workflow_id: str, delay_until_ms: int, now_ms: int
    ) -> bool: ...

    async def fork_workflow(
        self,
        *,
        original_id: str,
        forked_id: str,
        start_step: int,
        application_version: str | None,
        queue_name: str,
        queue_partition_key: str | None,
        timeout_ms: int | None,
        application_name: str | None,
        now_ms: int,
        replacement_children: str | None = None,
    ) -> bool:
        """Create ``forked_id`` from ``original_id``'s row and checkpoints before ``start_step``
        (one transaction); False if the original does not exist. ``replacement_children``
        (JSON text of ``{child id: replacement id}``) renames the children the copied
        checkpoints refer to."""

    # --- attributes and rewind (sql/attributes.py, sql/rewind.py) -----------------------

    async def update_workflow_attributes(
        self, workflow_id: str, attributes: str | None, *, merge: bool, now_ms: int
    ) -> bool:
        """Replace the workflow's attributes (JSON text; None clears them) or, with
        ``merge``, add their top-level keys to the stored ones; False: no such workflow."""

    async def rewind_workflow(
        self,
        workflow_id: str,
        start_step: int,
        *,
        application_version: str | None,
        queue_name: str | None,
        queue_partition_key: str | None,
        now_ms: int,
    ) -> None:
        """Discard a terminal workflow's history from ``start_step`` on and re-enqueue it
        (one transaction). A missing workflow raises
        :class:`~dbos_trio.errors.DBOSNonExistentWorkflowError`, an active one (or one
        whose status changed meanwhile) :class:`~dbos_trio.errors.DBOSException`."""

    # --- retention (sql/retention.py) ------------------------------------------------

    async def payload_references(self, after: str, batch_size: int) -> list[str]:
        """Up to ``batch_size`` distinct payload store references held by any row of the
        schema (every application's), in text order, after ``after``: one batch of the
        payload collector's mark. One read; a database failure raises."""

    async def gc_nth_newest(self, application_name: str | None, offset: int) -> int | None:
        """``created_at`` of the ``offset + 1``-th newest workflow (of the application and
        unclaimed ones; every application when None), or None if there are fewer."""

    async def gc_batch(
        self,
        *,
        application_name: str | None,
        after_ms: int,
        created_before_ms: int,
        keep_before_ms: int,
        completed_before_ms: int,
        batch_size: int,
        leader_only: bool,
    ) -> list[int] | None:
        """Delete up to ``batch_size`` terminal workflows (and every row of theirs) created
        at or after ``after_ms`` and before ``created_before_ms`` that were created before
        ``keep_before_ms`` or finished before ``completed_before_ms``, oldest first, in one
        transaction; their ``created_at`` values. None: ``leader_only`` and another process
        holds the application's retention lock (nothing deleted)."""

    async def cancel_created_before(
        self, application_name: str | None, created_before_ms: int, batch_size: int, now_ms: int
    ) -> list[str]:
        """Cancel up to ``batch_size`` PENDING/ENQUEUED/DELAYED workflows created before
        ``created_before_ms``, oldest first, in one statement; the ids cancelled."""

    # --- renaming an application (sql/rename.py) -----------------------------------------

    async def rename_application_core(
        self, old_name: str | None, new_name: str, *, adopt_unclaimed: bool
    ) -> RenameCore:
        """Re-own queues, schedules, versions and PENDING/ENQUEUED/DELAYED workflows of
        ``old_name`` (and unclaimed ones with ``adopt_unclaimed``) in one transaction."""

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
        """Re-own the next ``batch_size`` workflow ids' rows of ``table`` (``"workflows"``
        or ``"steps"``) after key ``after``, in one transaction; the last batch takes
        every row left."""
