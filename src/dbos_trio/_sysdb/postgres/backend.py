"""The PostgreSQL backend: the shared protocol (:mod:`dbos_trio._sysdb.sql`) on a Trio-native
psycopg pool, plus what only PostgreSQL does.

Invariants, and why:

* One round trip per operation on the hot path: every named statement runs on an
  autocommit connection and does its checks in the statement itself (CTEs with row
  locks), so a step costs one commit and nothing else.
* The claim spends shared budgets in one statement: ``SKIP LOCKED`` under READ COMMITTED
  when no budget is shared; ``NOWAIT`` under REPEATABLE READ when one is (a second
  claimer conflicts and backs off rather than overspend); SERIALIZABLE when a partition's
  claim also spends a queue-wide budget, which rows of other partitions never lock.
* One executor per application sweeps timeouts at a time, elected by a transaction-scoped
  advisory lock keyed by schema and application.
* Other processes learn of events, stream writes, cancellations and enqueues through a
  coalescing notifier (enqueues on its leading edge), and of messages through the
  migration-1 trigger; this process's waiters are woken at once.
* No secret of the URLs (``url``, ``direct_url``) reaches an error or a log line: one
  :class:`~dbos_trio._redact.Scrubber` of both is handed to the pool, and through it to
  the statement runner, the retrier, the listener and the notifier; a failure to connect
  or migrate at open is a :class:`DBOSInitializationError` with scrubbed text, chained to
  nothing.
"""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

import psycopg
import trio

from dbos_trio._core.retry import Backoff
from dbos_trio._core.statuses import ENQUEUED
from dbos_trio._pg.connecting import connect
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._pg.pool import Pool
from dbos_trio._redact import Scrubber
from dbos_trio._sysdb.errors import ConnectionLost, Contention, SystemDatabaseUnreachable
from dbos_trio._sysdb.migrations import quote_identifier
from dbos_trio._sysdb.postgres import durability, migrate
from dbos_trio._sysdb.postgres.errors import map_error, missing_database_hint
from dbos_trio._sysdb.postgres.listener import POLLING_RECHECK_SECONDS, Listener
from dbos_trio._sysdb.postgres.listing import (
    DEFAULT_COLLATION,
    PostgresListing,
    orders_by_code_point,
)
from dbos_trio._sysdb.postgres.notifier import Notifier
from dbos_trio._sysdb.postgres.sessions import session_settings
from dbos_trio._sysdb.postgres.statements import PostgresStatements
from dbos_trio._sysdb.protocol import BackgroundTask, QueueContention
from dbos_trio._sysdb.records import (
    ClaimedWorkflow,
    ClaimRequest,
    ReplicationState,
    WorkflowFilters,
    WorkflowRow,
)
from dbos_trio._sysdb.retry import Retrier, RetryPolicy
from dbos_trio._sysdb.rows import (
    NEW_WORKFLOW_PARAMETER_TYPES,
    claim_params,
    claimed_workflow,
    in_dequeue_order,
    new_workflow_batch_values,
    new_workflow_placeholders,
    new_workflow_record,
    similar_workflow_record,
    similar_workflow_values,
)
from dbos_trio._sysdb.sql import SQLSystemDatabase
from dbos_trio._sysdb.statements import (
    PORTABLE_PACKAGE,
    Row,
    Statement,
    Transaction,
    Value,
    build_statements,
    load_templates,
    merged,
    render,
    to_psycopg,
)
from dbos_trio._sysdb.wakeups import DELAYED_CHANNEL, QUEUE_CHANNEL, WakeupRegistry
from dbos_trio.errors import DBOSInitializationError

# A lost connection or a restarting server: three more tries, 0.05, 0.25 and 1 s apart; a
# lost race for a row lock or a serialization failure: three more tries, soon.
RETRY_POLICY = RetryPolicy(
    connection=Backoff(first=0.05, factor=5.0, cap=1.0),
    contention=Backoff(first=0.05, factor=5.0, cap=1.0),
    max_attempts=3,
)
# A claim is not retried as such: one that conflicts with a peer's backs off in the dequeue
# worker, and one whose connection was lost is re-found by its token (sql/queues.py).
CLAIM_RETRY_POLICY = RetryPolicy(connection=None, contention=None)

_PARTITION_FILTER = "AND queue_partition_key = %(partition_key)s"


def _claim_name(consistent: bool, partitioned: bool) -> str:
    return f"claim_{'nowait' if consistent else 'skip_locked'}{'_partition' if partitioned else ''}"


def _values(schema: str) -> dict[str, Value]:
    """What the placeholders of PostgreSQL's statements stand for."""
    return {
        # psycopg reads "%" in the text as a placeholder, so the schema's own are doubled.
        "schema": quote_identifier(schema).replace("%", "%%"),
        "now_ms": "(EXTRACT(epoch FROM now()) * 1000)::bigint",
        "in": lambda parameter: f"= ANY(%({parameter})s)",
        "octets": lambda column: f"octet_length({column})",  # read from the TOAST header
        **new_workflow_placeholders("%({})s", {"attributes": "::jsonb"}),
        "new_workflow_record": new_workflow_record(NEW_WORKFLOW_PARAMETER_TYPES),
        "new_workflow_batch_values": new_workflow_batch_values({"attributes": "::jsonb"}),
        "similar_workflow_record": similar_workflow_record(NEW_WORKFLOW_PARAMETER_TYPES),
        "similar_workflow_values": similar_workflow_values({"attributes": "::jsonb"}),
    }


def _statements(schema: str) -> dict[str, Statement]:
    values = _values(schema)
    portable, templates = load_templates(PORTABLE_PACKAGE), load_templates(__package__)
    merged(portable, templates)  # refuses a name defined in both
    statements = build_statements(portable, values, scripts_allowed=False, convert=to_psycopg)
    statements.update(
        build_statements(templates, values, scripts_allowed=False, deferred=frozenset({"claim"}))
    )
    for consistent in (False, True):
        for partitioned in (False, True):
            text = render(
                templates["claim"],
                {
                    **values,
                    "lock": "NOWAIT" if consistent else "SKIP LOCKED",
                    "partition": _PARTITION_FILTER if partitioned else "",
                },
                name="claim",
            )
            name = _claim_name(consistent, partitioned)
            statements[name] = Statement(name, (text,), writes=True)
    return statements


def statement_text(schema: str, name: str) -> str:
    """The SQL of a named statement, rendered for ``schema`` (for tests and EXPLAIN)."""
    return _statements(schema)[name].text


def claim_statement(schema: str, *, consistent: bool, partitioned: bool) -> str:
    """The claim statement of one variant, rendered for ``schema``."""
    return statement_text(schema, _claim_name(consistent, partitioned))


class PostgresSystemDatabase(SQLSystemDatabase):
    """System database on PostgreSQL, through a Trio-native psycopg pool."""

    STEP_BATCH_STATEMENT: ClassVar[str | None] = "record_steps"
    OUTCOME_BATCH_STATEMENT: ClassVar[str | None] = "record_outcomes"
    INIT_BATCH_STATEMENT: ClassVar[str | None] = "init_workflows"
    SIMILAR_BATCH_STATEMENT: ClassVar[str | None] = "insert_new_workflows"
    TURN_STATEMENT: ClassVar[str | None] = "request_turn"

    def __init__(
        self,
        pool: Pool,
        schema: str,
        *,
        wakeups: WakeupRegistry | None = None,
        use_listen_notify: bool = True,
        notification_coalesce: float = 0.01,
        retry: RetryPolicy = RETRY_POLICY,
        direct_url: str | None = None,
        query_timeout_ms: int | None = None,
    ) -> None:
        self._pool = pool
        self.schema = schema
        retrier = Retrier(retry, scrub=pool.scrub)
        self._db: PostgresStatements = PostgresStatements(
            pool, _statements(schema), retrier, query_timeout_ms=query_timeout_ms
        )
        self._pg_listing = PostgresListing(quote_identifier(schema).replace("%", "%%"))
        self._listing = self._pg_listing
        self.wakeups = wakeups if wakeups is not None else WakeupRegistry()
        self.listener = None
        if use_listen_notify:
            connect_direct = None
            if direct_url is not None:

                async def connect_direct() -> TrioConnection:
                    conn = await connect(
                        direct_url,
                        autocommit=True,
                        connect_timeout=pool.connect_timeout,
                        scrub=pool.scrub,
                    )
                    try:
                        await pool.configure(conn)
                    except BaseException:
                        await conn.close()
                        raise
                    return conn

            self.listener = Listener(pool, self.wakeups, connect=connect_direct, retrier=retrier)
        self.notifier = Notifier(
            pool,
            self.wakeups,
            window=notification_coalesce,
            push=use_listen_notify,
            notify_sql=self._db.sql("notify_batch"),
            retrier=retrier,
            # A worker in another process waits for these: pushed on the leading edge.
            urgent=frozenset({QUEUE_CHANNEL, DELAYED_CHANNEL}),
        )
        # A stable 64-bit key per (schema, application) for the timeout-sweep leader lock.
        self._sweep_lock_keys: dict[str, int] = {}

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        schema: str,
        max_connections: int,
        connect_timeout: float,
        run_migrations: bool,
        use_listen_notify: bool,
        wakeups: WakeupRegistry | None = None,
        notification_coalesce: float = 0.01,
        retry: RetryPolicy | None = None,
        direct_url: str | None = None,
        prepared_statements: bool = True,
        statement_timeout: float | None = None,
        idle_in_transaction_timeout: float | None = None,
        synchronous_commit: str | None = None,
    ) -> PostgresSystemDatabase:
        """Connect, then migrate (or only verify) the schema. Fails fast on a bad URL.

        ``direct_url`` reaches the server without a transaction-pooling proxy, for what
        needs a session of its own (migrations, LISTEN); ``prepared_statements=False``
        turns server-side prepared statements off (PgBouncer in transaction mode).
        ``statement_timeout`` (seconds) bounds the listing queries, whose timeout raises
        :class:`~dbos_trio.DBOSQueryTimeoutError`; ``idle_in_transaction_timeout`` is set
        as ``idle_in_transaction_session_timeout`` on every connection (pool and listener),
        so a transaction left open by a stuck client cannot hold its locks forever;
        ``synchronous_commit`` likewise (``remote_apply``: every commit waits for a standby).

        Raises :class:`DBOSInitializationError` when it cannot connect (a
        :class:`~dbos_trio._sysdb.errors.SystemDatabaseUnreachable`), migrate or verify;
        its text holds no secret of either URL, and nothing is chained to it (libpq's
        errors may quote a password). On any failure or cancellation the pool is closed.
        """
        pool = Pool(
            url,
            max_size=max_connections,
            connect_timeout=connect_timeout,
            prepared_statements=prepared_statements,
            scrub=Scrubber.for_urls(direct_url),
            configure=session_settings(idle_in_transaction_timeout, synchronous_commit),
        )
        try:
            failure = await _open_and_migrate(
                pool, direct_url, schema, run_migrations, use_listen_notify, connect_timeout
            )
            if failure is not None:
                raise failure  # outside the except that caught the driver's error
        except BaseException:
            with trio.CancelScope(shield=True):
                await pool.close()
            raise
        return cls(
            pool,
            schema,
            wakeups=wakeups,
            use_listen_notify=use_listen_notify,
            notification_coalesce=notification_coalesce,
            retry=RETRY_POLICY if retry is None else retry,
            direct_url=direct_url,
            query_timeout_ms=None if statement_timeout is None else round(statement_timeout * 1000),
        )

    async def list_workflows(self, filters: WorkflowFilters) -> list[WorkflowRow]:
        if filters.workflow_id_prefix is not None and self._pg_listing.bytewise is None:
            rows = await self._db.query(DEFAULT_COLLATION, [])
            self._pg_listing.bytewise = bool(rows) and orders_by_code_point(rows[0][0], rows[0][1])
        return await super().list_workflows(filters)

    async def replication_state(self) -> ReplicationState:
        return await durability.replication_state(self._db)

    async def close(self) -> None:
        if not self._pool.closed:
            await self.notifier.flush()
        await self._pool.close()

    def background_tasks(self) -> list[BackgroundTask]:
        tasks: list[BackgroundTask] = [self.notifier.run]
        if self.listener is not None:
            tasks.append(self.listener.run)
        return tasks

    @property
    def recheck_interval(self) -> float:
        if self.listener is None:
            return POLLING_RECHECK_SECONDS
        return self.listener.recheck_interval

    @property
    def pool(self) -> Pool:
        return self._pool

    # --- what only PostgreSQL does -----------------------------------------------------

    def _announce(self, key: str, notify: tuple[str, str] | None, *, sent: bool = False) -> None:
        if notify is None:
            self.wakeups.wake(key)  # the migration-1 trigger NOTIFYs the other processes
        else:
            self.notifier.publish(notify[0], notify[1], key, sent=sent)

    async def _write_one_start(self, params: dict[str, Any]) -> Row | None:
        # A lone new ENQUEUED row on the notifier's leading edge NOTIFYs its queue in its
        # own statement (one round trip less before a worker elsewhere hears of it).
        if (
            params["status"] == ENQUEUED
            and params["queue_name"] is not None
            and self.notifier.take_leading_edge(QUEUE_CHANNEL)
        ):
            params = {**params, "notify_channel": QUEUE_CHANNEL}
        return await self._db.one("init_workflow", params)

    def _sweep_lock_key(self, application_name: str) -> int:
        key = self._sweep_lock_keys.get(application_name)
        if key is None:
            digest = hashlib.sha256(
                f"dbos.background_job.{self.schema}.{application_name}.background_jobs".encode()
            ).digest()
            key = int.from_bytes(digest[:8], "big", signed=True)
            self._sweep_lock_keys[application_name] = key
        return key

    async def _sweep_leader(self, tx: Transaction, application_name: str) -> bool:
        row = await tx.one(
            "try_timeout_sweep_lock", {"lock_key": self._sweep_lock_key(application_name)}
        )
        return bool(row and row[0])

    async def _retention_leader(self, tx: Transaction, application_name: str | None) -> bool:
        # A key of its own (not the timeout sweep's): a long purge must not hold up sweeps.
        digest = hashlib.sha256(
            f"dbos_trio.retention.{self.schema}.{application_name or ''}".encode()
        ).digest()
        row = await tx.one(
            "try_retention_lock", {"lock_key": int.from_bytes(digest[:8], "big", signed=True)}
        )
        return bool(row and row[0])

    async def _claim_once(self, request: ClaimRequest) -> list[ClaimedWorkflow]:
        partitioned = request.partition_key is not None
        name = _claim_name(request.consistent, partitioned)
        params = claim_params(request)

        async def claim(tx: Transaction) -> list[Row]:
            return await tx.all(name, params)

        try:
            if not request.consistent:
                rows = await self._db.all(name, params, policy=CLAIM_RETRY_POLICY)
            else:
                # One partition's rows never lock-conflict with another's, so a queue-wide
                # budget spent from two partitions at once needs SERIALIZABLE to be caught.
                queue_wide = (
                    request.global_concurrency is not None or request.rate_limit_max is not None
                )
                isolation = "SERIALIZABLE" if partitioned and queue_wide else "REPEATABLE READ"
                # Generic plans: with a large table the planner keeps making custom plans
                # of this statement, which cost more than running it (G1: 1.6 -> 2.9 ms at
                # 100k rows; 1.7 -> 1.9 ms with the generic plan).
                rows = await self._db.transaction(
                    claim, isolation=isolation, policy=CLAIM_RETRY_POLICY, generic_plans=True
                )
        except Contention as conflict:
            raise QueueContention(str(conflict)) from None
        return in_dequeue_order([claimed_workflow(row) for row in rows])


async def _open_and_migrate(
    pool: Pool,
    direct_url: str | None,
    schema: str,
    run_migrations: bool,
    use_listen_notify: bool,
    connect_timeout: float,
) -> DBOSInitializationError | None:
    """Connect, then migrate (or verify); the error to raise, scrubbed, or None.

    Returned rather than raised so the caller raises it outside this ``except``: raised
    here, it would carry the driver's unscrubbed error as its ``__context__``.
    """
    scrub = pool.scrub
    try:
        await pool.open()
    except psycopg.Error as error:
        return SystemDatabaseUnreachable(
            f"cannot connect to the system database: {scrub(error)}{missing_database_hint(error)}"
        )
    if direct_url is None:
        try:
            async with pool.connection() as conn:
                await _migrate_on(conn, schema, run_migrations, use_listen_notify, scrub)
        except psycopg.Error as error:
            return _migration_failed(run_migrations, error, scrub)
        return None
    # Migrate on a direct connection: the migration lock is a session advisory lock,
    # which a transaction-pooling proxy breaks.
    try:
        conn = await connect(
            direct_url, autocommit=True, connect_timeout=connect_timeout, scrub=scrub
        )
    except psycopg.Error as error:
        return SystemDatabaseUnreachable(
            f"cannot connect to the system database directly: {scrub(error)}"
            f"{missing_database_hint(error)}"
        )
    try:
        await _migrate_on(conn, schema, run_migrations, use_listen_notify, scrub)
    except psycopg.Error as error:
        return _migration_failed(run_migrations, error, scrub)
    finally:
        with trio.CancelScope(shield=True):
            await conn.close()
    return None


def _migration_failed(
    run_migrations: bool, error: psycopg.Error, scrub: Scrubber
) -> DBOSInitializationError:
    """The error to raise for a driver error while migrating or verifying: the database
    became unreachable (the connection was lost), or something else went wrong."""
    doing = "migrate" if run_migrations else "verify the schema of"
    text = f"cannot {doing} the system database: {scrub(error)}"
    if isinstance(map_error(error, scrub), ConnectionLost):
        return SystemDatabaseUnreachable(text)
    return DBOSInitializationError(text)


async def _migrate_on(
    conn: TrioConnection,
    schema: str,
    run_migrations: bool,
    use_listen_notify: bool,
    scrub: Scrubber,
) -> None:
    if run_migrations:
        await migrate.migrate(conn, schema, use_listen_notify=use_listen_notify, scrub=scrub)
    else:
        await migrate.verify(conn, schema)
