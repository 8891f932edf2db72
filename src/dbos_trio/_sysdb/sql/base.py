"""What the shared implementation of the protocol needs from a backend.

Each concern of the protocol (workflows, management, queues, messages) is a mixin over
:class:`SQLBackendBase`: it runs named statements through ``self._db`` and calls the few
hooks below, which are all a backend supplies beyond its statements, its connection
layer and its atomic claim.
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn

from dbos_trio._core.statuses import CANCELLED
from dbos_trio._sysdb.sql.listing import ListingDialect
from dbos_trio._sysdb.statements import StatementRunner, Transaction
from dbos_trio._sysdb.wakeups import WakeupRegistry, enqueue_announcement
from dbos_trio.errors import DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError


class SQLBackendBase:
    """The state and hooks every shared operation may use."""

    _db: StatementRunner
    _listing: ListingDialect
    wakeups: WakeupRegistry
    # Whether every write takes a database-wide lock, even one that changes nothing
    # (SQLite's single writer): idle background writes then look first without it.
    IDLE_WRITES_TAKE_LOCK: ClassVar[bool] = False

    def _announce(self, key: str, notify: tuple[str, str] | None, *, sent: bool = False) -> None:
        """A write under wakeup ``key`` committed: wake its waiters here, and, with
        ``notify`` = (channel, payload), those of other processes (``None``: a trigger
        notifies them already; ``sent``: the write's own statement NOTIFYed them)."""
        raise NotImplementedError

    def _announce_enqueued(self, queue_name: str, status: str, *, sent: bool = False) -> None:
        """A new ENQUEUED or DELAYED row on ``queue_name`` committed: wake the queue's
        worker (here at once, elsewhere through NOTIFY unless the write's statement
        ``sent`` it), or the dequeue supervisor, which releases the row when it comes
        due."""
        announcement = enqueue_announcement(queue_name, status)
        if announcement is not None:
            key, channel, payload = announcement
            self._announce(key, (channel, payload), sent=sent)

    async def _sweep_leader(self, tx: Transaction, application_name: str) -> bool:
        """Inside the sweep's transaction: whether this executor sweeps timeouts now."""
        return True

    @property
    def retries(self) -> int:
        """Statements retried after a transient error since this backend opened."""
        return self._db.retrier.retries

    async def _exists(self, name: str, params: dict[str, Any]) -> bool:
        row = await self._db.one(name, params)
        return bool(row and row[0])

    async def _raise_lost_ownership(self, workflow_id: str, owner_xid: str) -> NoReturn:
        """A fenced write found the workflow no longer ours: say whether it was cancelled
        or taken over by another execution."""
        row = await self._db.one(
            "diagnose_step_write",
            {"workflow_id": workflow_id, "owner_xid": owner_xid, "function_id": -1},
        )
        if row is not None and row[0] == CANCELLED:
            raise DBOSWorkflowCancelledError._create(workflow_id)
        raise DBOSWorkflowConflictIDError._create(workflow_id)
