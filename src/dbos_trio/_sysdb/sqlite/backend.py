"""The SQLite backend: the shared protocol (:mod:`dbos_trio._sysdb.sql`) on one SQLite file,
plus what only SQLite does.

Invariants, and why:

* Semantics are the PostgreSQL backend's, operation for operation: the same shared code
  runs the same statement names; what differs is how atomicity is bought. A write runs in
  one ``BEGIN IMMEDIATE`` transaction, which takes SQLite's single write lock: a fenced
  script's ownership check and its writes cannot be separated by another writer, the
  fence ``FOR NO KEY UPDATE`` gives on PostgreSQL. One writer at a time also makes
  ``SKIP LOCKED``/``NOWAIT`` and the sweep's advisory lock unnecessary: a claim computes
  its budget and spends it with nobody in between.
* Idle background work takes no write lock (every write, even one changing nothing,
  would queue other processes' writers behind it): claims, releases and sweeps look
  first, without it.
* Nothing here reads SQLite's clock for workflow time: every timestamp comes from the
  engine, so a ``MockClock`` drives sleeps, deadlines and rate limits.
* No LISTEN: waiters poll every :attr:`recheck_interval`, and writes here wake the
  waiters of every backend of this process open on the same file at once (:mod:`.peers`).
"""

from __future__ import annotations

from typing import ClassVar

import trio

from dbos_trio._core.admission import claim_budget
from dbos_trio._sysdb.errors import Contention, SystemDatabaseUnreachable
from dbos_trio._sysdb.protocol import BackgroundTask, QueueContention
from dbos_trio._sysdb.records import ClaimedWorkflow, ClaimRequest
from dbos_trio._sysdb.retry import RetryPolicy
from dbos_trio._sysdb.rows import (
    claim_params,
    claimed_workflow,
    in_dequeue_order,
    new_workflow_placeholders,
)
from dbos_trio._sysdb.sql import SQLSystemDatabase
from dbos_trio._sysdb.sqlite import migrate
from dbos_trio._sysdb.sqlite.connection import (
    BUSY_RETRY,
    FAIL_IF_BUSY,
    MEMORY,
    Connection,
    database_path,
    file_exists,
    path_hint,
)
from dbos_trio._sysdb.sqlite.listing import SQLITE_LISTING
from dbos_trio._sysdb.sqlite.peers import Peers
from dbos_trio._sysdb.sqlite.statements import SQLiteStatements
from dbos_trio._sysdb.statements import (
    PORTABLE_PACKAGE,
    Row,
    Statement,
    Transaction,
    Value,
    build_statements,
    load_templates,
    merged,
)
from dbos_trio._sysdb.wakeups import WakeupRegistry

POLLING_RECHECK_SECONDS = 1.0
"""How often a waiter re-checks the database: the only way to see other processes' writes."""

SQLITE_VALUES: dict[str, Value] = {
    "schema": "main",
    "now_ms": "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    "in": lambda parameter: f"IN (SELECT value FROM json_each(:{parameter}))",
    # Bytes, as PostgreSQL's octet_length (length() of TEXT counts characters).
    "octets": lambda column: f"length(CAST({column} AS BLOB))",
    **new_workflow_placeholders(":{}"),
}
"""What the placeholders of portable statements stand for on SQLite."""


def sqlite_statements() -> dict[str, Statement]:
    """Every statement of the SQLite backend, rendered: the portable ones and its own."""
    templates = merged(load_templates(PORTABLE_PACKAGE), load_templates(__package__))
    return build_statements(templates, SQLITE_VALUES, scripts_allowed=True)


class SQLiteSystemDatabase(SQLSystemDatabase):
    """System database in one SQLite file, driven synchronously from the Trio thread."""

    IDLE_WRITES_TAKE_LOCK: ClassVar[bool] = True
    TURN_STATEMENT: ClassVar[str | None] = "request_turn"

    def __init__(
        self,
        connection: Connection,
        *,
        wakeups: WakeupRegistry | None = None,
        recheck_interval: float = POLLING_RECHECK_SECONDS,
    ) -> None:
        self._connection = connection
        self._db: SQLiteStatements = SQLiteStatements(connection, sqlite_statements())
        self._listing = SQLITE_LISTING
        self.wakeups = wakeups if wakeups is not None else WakeupRegistry()
        self._recheck_interval = recheck_interval
        self._peers = Peers(None if connection.path == MEMORY else connection.path, self.wakeups)

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        run_migrations: bool = True,
        wakeups: WakeupRegistry | None = None,
        recheck_interval: float = POLLING_RECHECK_SECONDS,
        retry: RetryPolicy | None = None,
    ) -> SQLiteSystemDatabase:
        """Open (creating it if allowed) and migrate, or only verify, the database file."""
        path = database_path(url)
        if not run_migrations and not file_exists(path):
            # The same kind as a PostgreSQL database that does not exist (the CLI's exit 4).
            raise SystemDatabaseUnreachable(
                f"the SQLite system database {path!r} does not exist, and this process only "
                "opens an existing one: create it with `dbos-trio migrate -s <url>`, or by "
                "launching a DBOS once with Config(run_migrations=True), the default"
                f"{path_hint(path)}"
            )
        connection = await Connection.open(path, retry=BUSY_RETRY if retry is None else retry)
        try:
            if run_migrations:
                await migrate.migrate(connection)
            else:
                await migrate.verify(connection)
        except BaseException:
            connection.close()
            raise
        return cls(connection, wakeups=wakeups, recheck_interval=recheck_interval)

    async def close(self) -> None:
        self._peers.leave()
        self._connection.close()
        # Still an async call, but one that completes even in a cancelled scope.
        await trio.lowlevel.cancel_shielded_checkpoint()

    def background_tasks(self) -> list[BackgroundTask]:
        return []

    @property
    def recheck_interval(self) -> float:
        return self._recheck_interval

    @property
    def connection(self) -> Connection:
        return self._connection

    # --- what only SQLite does ---------------------------------------------------------

    def _announce(self, key: str, notify: tuple[str, str] | None, *, sent: bool = False) -> None:
        self._peers.wake(key)

    async def _claim_once(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        params = claim_params(request)

        async def claim(tx: Transaction) -> list[Row]:
            budget = claim_budget(request.local_budget, await _shared_budgets(tx, request))
            if budget == 0:
                return []
            return await tx.all("claim", {**params, "budget": -1 if budget is None else budget})

        if not await self._exists("has_claimable", params):
            return []  # an idle poll takes no write lock
        try:
            # A held lock means a peer executor is claiming: back off rather than wait.
            rows = await self._db.transaction(claim, policy=FAIL_IF_BUSY)
        except Contention as busy:
            raise QueueContention(str(busy)) from None
        return in_dequeue_order([claimed_workflow(row) for row in rows])


async def _shared_budgets(tx: Transaction, request: ClaimRequest) -> list[tuple[int, int]]:
    """(cap, used) for each shared limit of the claim, counted inside its transaction."""
    base = {
        "queue_name": request.queue_name,
        "application_name": request.application_name,
        "now": request.now_ms,
    }
    spent: list[tuple[int, int]] = []
    for cap, period_ms, partition_key in (
        (request.rate_limit_max, request.rate_limit_period_ms, None),
        (
            request.partition_rate_limit_max,
            request.partition_rate_limit_period_ms,
            request.partition_key,
        ),
    ):
        if cap is not None and period_ms is not None:
            params = {**base, "period_ms": period_ms, "partition_key": partition_key}
            row = await tx.one("count_recent_starts", params)
            spent.append((cap, row[0] if row else 0))
    for cap, partition_key in (
        (request.global_concurrency, None),
        (request.partition_concurrency, request.partition_key),
    ):
        if cap is not None:
            row = await tx.one("count_running", {**base, "partition_key": partition_key})
            spent.append((cap, row[0] if row else 0))
    if request.global_concurrency is not None and request.turn_window_ms is not None:
        turns = await tx.one("count_turns", claim_params(request))
        waiting, others, mine = turns if turns else (0, 0, 0)
        if waiting:
            # Another executor waits for a turn: no more than a fair share of the limit.
            spent.append(((request.global_concurrency + others) // (others + 1), mine))
    return spent
