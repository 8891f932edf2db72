"""Recovery, queues and the timeout sweep: the rows background work moves.

Invariants, and why:

* Recovery is one write: this executor's abandoned PENDING rows go back to their queue
  (or the internal one), and the next claim counts the attempt, so repeating it is
  harmless.
* A queue name belongs to the first application that registers it; a foreign owner's row
  is never overwritten, and registering it anyway is an error naming the owner.
* The claim itself — the one statement that must spend shared budgets atomically — is
  each backend's own (:meth:`claim`); everything around it is here.
"""

from __future__ import annotations

from typing import ClassVar

from dbos_trio._core.admission import QueueConfig
from dbos_trio._sysdb.errors import ConnectionLost
from dbos_trio._sysdb.records import ClaimedWorkflow, ClaimRequest
from dbos_trio._sysdb.rows import (
    claim_params,
    claimed_workflow,
    in_dequeue_order,
    queue_config,
    queue_params,
)
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Row, Transaction
from dbos_trio._sysdb.wakeups import CANCEL_CHANNEL, cancels_key
from dbos_trio.errors import DBOSException


class QueueOperations(SQLBackendBase):
    # The backend's turn-taking statement (see QueueStore.request_turn); None: no turns.
    TURN_STATEMENT: ClassVar[str | None] = None

    async def reenqueue_abandoned(
        self, executor_id: str, application_version: str, application_name: str, now_ms: int
    ) -> int:
        return await self._db.run(
            "reenqueue_abandoned",
            {
                "executor_id": executor_id,
                "application_version": application_version,
                "application_name": application_name,
                "now": now_ms,
            },
        )

    async def requeue_workflow(self, workflow_id: str, owner_xid: str, now_ms: int) -> bool:
        changed = await self._db.run(
            "requeue_workflow",
            {"workflow_id": workflow_id, "owner_xid": owner_xid, "now": now_ms},
        )
        return changed > 0

    async def upsert_queue(self, config: QueueConfig, *, overwrite: bool) -> None:
        params = queue_params(config, overwrite)

        async def upsert(tx: Transaction) -> Row | None:
            await tx.run("upsert_queue", params)
            return await tx.one("queue_owner", params)

        owner = await self._db.transaction(upsert)
        if owner is not None and owner[0] not in (None, config.application_name):
            raise DBOSException(
                f"queue {config.name!r} belongs to application {owner[0]!r}: queue names are "
                "unique across the applications sharing a system database"
            )

    async def list_queues(self, application_name: str | None) -> list[QueueConfig]:
        rows = await self._db.all("list_queues", {"application_name": application_name})
        return [queue_config(row) for row in rows]

    async def get_queue(self, name: str) -> QueueConfig | None:
        row = await self._db.one("get_queue", {"name": name})
        return None if row is None else queue_config(row)

    async def delete_queue(self, name: str) -> bool:
        return await self._db.run("delete_queue", {"name": name}) > 0

    async def pause_queue(self, name: str, now_ms: int) -> bool:
        return await self._db.run("pause_queue", {"name": name, "now": now_ms}) > 0

    async def unpause_queue(self, name: str, now_ms: int) -> bool:
        changed = await self._db.run("unpause_queue", {"name": name, "now": now_ms}) > 0
        if changed:
            self._announce_enqueued(name, "ENQUEUED")
        return changed

    async def release_delayed(self, application_name: str, now_ms: int) -> int:
        params = {"application_name": application_name, "now": now_ms}
        if self.IDLE_WRITES_TAKE_LOCK and not await self._exists("has_due_delayed", params):
            return 0
        return await self._db.run("release_delayed", params)

    async def rate_window_reopens(
        self, queue_name: str, application_name: str, limit: int, period_ms: int, now_ms: int
    ) -> int | None:
        params = {
            "queue_name": queue_name,
            "application_name": application_name,
            "limit": limit,
            "period_ms": period_ms,
            "now": now_ms,
        }
        row = await self._db.one("rate_window_reopens", params)
        return None if row is None or row[0] is None else int(row[0])

    async def next_delayed_due(self, application_name: str) -> int | None:
        row = await self._db.one("next_delayed_due", {"application_name": application_name})
        return None if row is None or row[0] is None else int(row[0])

    async def list_partitions(self, queue_name: str) -> list[str]:
        rows = await self._db.all("list_partitions", {"queue_name": queue_name})
        return [row[0] for row in rows]

    async def claim(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        """Claim (see the protocol); a claim whose reply was lost is not made twice: once
        the database is back, the rows it made ours are found by its token and returned."""
        attempts = None
        while True:
            try:
                return await self._claim_once(request)
            except ConnectionLost as lost:
                attempts = await self._db.retrier.pause(lost, attempts)
            rows = await self._db.all(
                "claimed_by_token",
                {"owner_xid": request.owner_xid, "queue_name": request.queue_name},
            )
            if rows:
                return in_dequeue_order([claimed_workflow(row) for row in rows])

    async def request_turn(self, request: ClaimRequest) -> bool:
        if self.TURN_STATEMENT is None or request.turn_window_ms is None:
            return False
        params = claim_params(request)
        if self.IDLE_WRITES_TAKE_LOCK and not await self._exists("has_claimable", params):
            return False  # nothing to wait for: an idle queue's polls never take the lock
        return await self._db.run(self.TURN_STATEMENT, params) > 0

    async def _claim_once(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        """One claim statement (each backend's own), retried by nobody: a lost connection
        raises :class:`ConnectionLost`, a lost lock race :class:`QueueContention`."""
        raise NotImplementedError

    async def pending_of_executor(
        self,
        executor_id: str,
        application_version: str,
        application_name: str,
        updated_before_ms: int,
    ) -> list[tuple[str, str]]:
        rows = await self._db.all(
            "pending_of_executor",
            {
                "executor_id": executor_id,
                "application_version": application_version,
                "application_name": application_name,
                "updated_before": updated_before_ms,
            },
        )
        return [(row[0], row[1]) for row in rows]

    async def dead_letter(self, workflow_id: str, observed_attempts: int, now_ms: int) -> bool:
        changed = await self._db.run(
            "dead_letter",
            {"workflow_id": workflow_id, "observed_attempts": observed_attempts, "now": now_ms},
        )
        return changed > 0

    async def sweep_timeouts(self, application_name: str, now_ms: int) -> list[str]:
        params = {"application_name": application_name, "now": now_ms}
        if self.IDLE_WRITES_TAKE_LOCK and not await self._exists("has_expired", params):
            return []

        async def sweep(tx: Transaction) -> list[Row]:
            if not await self._sweep_leader(tx, application_name):
                return []
            return await tx.all("sweep_timeouts", params)

        cancelled = [row[0] for row in await self._db.transaction(sweep)]
        if cancelled:
            self._announce(cancels_key(), (CANCEL_CHANNEL, ""))
        return cancelled
