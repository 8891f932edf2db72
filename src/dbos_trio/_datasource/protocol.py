"""What the engine may ask of a datasource, and the connection a transaction function gets.

A *datasource* is the application's own database, on which ``@ds.transaction`` functions
run. Exactly-once rests on one invariant: **a transaction's result is inserted into
``datasource_outputs`` inside the same database transaction as the function's own
writes** (the table, its primary key ``(workflow_id, step_id)`` and the
``ON CONFLICT DO NOTHING RETURNING`` insert are the official SDK's, so either SDK replays
the other's rows). Either both commit or neither does, so after a crash the recorded row
says whether the writes happened, and a replay returns it instead of running them again.
This module is driver-free (layer: protocol): the backends implement it, the engine
(:mod:`dbos_trio._engine.durable.transactions`) drives it.

The connection API: :class:`TransactionConnection`, a small typed face over the driver,
not a raw psycopg connection. Why:

* **The datasource owns the transaction's boundaries.** The checkpoint insert, the
  ownership check and the ``COMMIT`` must come after the function and before anything else
  ends the transaction; a raw connection hands the function ``commit()``, ``rollback()``,
  ``transaction()``, ``set_autocommit()`` and ``close()``, any of which silently splits
  its writes from their checkpoint. This face has only statements.
* **One face for both backends.** The same ``execute``/``fetch_*`` calls, with psycopg's
  placeholders (``%s`` with a sequence, ``%(name)s`` with a mapping, ``%%`` for ``%``),
  work on PostgreSQL and on the embedded SQLite datasource, so an application written
  against SQLite in development moves to PostgreSQL without touching its transactions.
* **The fast path of our Trio-native driver.** On PostgreSQL a statement with named
  parameters runs as a prepared statement in one Bind/Execute round trip
  (:class:`~dbos_trio._pg.driver.TrioConnection`); positional ones are
  prepared by psycopg after a few executions.
* **Nothing is lost.** :attr:`TransactionConnection.driver` is the underlying connection
  (psycopg's ``AsyncConnection`` API on PostgreSQL — cursors, ``COPY``, pipelines, row
  factories — or ``sqlite3.Connection``) for what the face does not cover; ending the
  transaction through it is refused before the checkpoint is written.

A psycopg-compatible connection was the alternative: familiar, but it would expose exactly
the calls that break the guarantee, and it has no SQLite counterpart.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import attrs

from dbos_trio._core.retry import Backoff
from dbos_trio.errors import DBOSException, DBOSInvalidArgumentError

# Defined with the public errors (this layer's users catch it from ``dbos_trio``); named
# here too, for the backends and for rows pickled under this module's path.
from dbos_trio.errors import TransactionOutcomeUnknown as TransactionOutcomeUnknown

T = TypeVar("T")

Row: TypeAlias = tuple[Any, ...]
Params: TypeAlias = Sequence[Any] | Mapping[str, Any] | None
IsolationLevel: TypeAlias = Literal["SERIALIZABLE", "REPEATABLE READ", "READ COMMITTED"]
ISOLATION_LEVELS: tuple[IsolationLevel, ...] = ("SERIALIZABLE", "REPEATABLE READ", "READ COMMITTED")
FailureKind: TypeAlias = Literal["serialization", "connection"]

OUTPUTS_TABLE = "datasource_outputs"
VERSIONS_TABLE = "dbos_datasource_migrations"
"""The datasource's own version table, apart from the system database's ``dbos_migrations``
(a datasource may share the system database's schema)."""
LATEST_VERSION = 1

TRANSACTION_BACKOFF = Backoff(first=0.001, factor=1.5, cap=2.0)
"""Between attempts of a transaction that lost a serialization race (or its connection):
1 ms, growing by 1.5 to at most 2 s, as the official SDK waits."""


def isolation_level(value: object, argument: str = "isolation_level") -> IsolationLevel:
    """``value`` as an isolation level (any case, ``_`` for a space); a
    :class:`~dbos_trio.DBOSInvalidArgumentError` naming ``argument`` otherwise."""
    if isinstance(value, str):
        normalized = " ".join(value.replace("_", " ").upper().split())
        for level in ISOLATION_LEVELS:
            if normalized == level:
                return level
    raise DBOSInvalidArgumentError(
        f"{argument} must be one of {', '.join(repr(x.lower()) for x in ISOLATION_LEVELS)}, "
        f"not {value!r}"
    )


@attrs.frozen
class RecordedOutput:
    """A ``datasource_outputs`` row: the transaction's encoded output or error."""

    output: str | None
    error: str | None
    serialization: str | None


@attrs.frozen
class CheckpointTarget:
    """Where a transaction run from a workflow records its result, and how.

    ``encode`` turns the function's value into ``(output, serialization)`` (raising if it
    cannot); ``fence`` raises :class:`~dbos_trio.DBOSWorkflowConflictIDError` or
    :class:`~dbos_trio.DBOSWorkflowCancelledError` unless this execution still owns the
    workflow. It runs after the checkpoint row is inserted and before ``COMMIT``: holding
    that row, a later owner's insert of it waits for this transaction to end.
    """

    workflow_id: str
    step_id: int
    encode: Callable[[Any], tuple[str, str]]
    fence: Callable[[], Awaitable[None]]

    def row(self, output: str | None, error: str | None, serialization: str) -> dict[str, Any]:
        """The parameters of the ``insert_checkpoint`` statement both backends run."""
        return {
            "workflow_id": self.workflow_id,
            "step_id": self.step_id,
            "output": output,
            "error": error,
            "serialization": serialization,
        }


def ended_by_body() -> DBOSException:
    """What a backend raises when the transaction function committed or rolled back the
    transaction itself: its result could no longer commit with its writes."""
    return DBOSException(
        "the transaction function committed or rolled back its transaction itself; "
        "leave that to the datasource (its result must commit with its writes)"
    )


class StepAlreadyRecorded(Exception):
    """The checkpoint insert found the row taken: another execution committed this step
    first. Raised before ``COMMIT``, so this transaction is rolled back; the recorded row
    is the step's result."""


class TransactionConnection(Protocol):
    """The connection a ``@ds.transaction`` function gets: statements of its transaction.

    Placeholders are psycopg's on both backends: ``%s`` with a sequence of values,
    ``%(name)s`` with a mapping, ``%%`` for a literal ``%``. Rows are tuples. Every call is
    a Trio checkpoint: cancellation raises there, and the whole transaction rolls back.
    A statement that fails raises the driver's own error (``psycopg.Error`` or
    ``sqlite3.Error``); the transaction is then aborted, and the function should let the
    error propagate. Calls after the transaction ended raise :class:`~dbos_trio.DBOSException`.
    """

    @property
    def dialect(self) -> Literal["postgresql", "sqlite"]:
        """Which database this is, for the rare statement whose SQL differs."""

    @property
    def driver(self) -> Any:
        """The driver's connection (``TrioConnection``, a psycopg ``AsyncConnection``, or a
        ``sqlite3.Connection``), for what this face does not cover. Never commit, roll back
        or close it: the datasource refuses a transaction its function ended."""

    async def execute(self, sql: str, params: Params = None) -> int:
        """Run a statement; the number of rows it changed (or returned), -1 if unknown."""

    async def execute_many(self, sql: str, params: Sequence[Params]) -> int:
        """Run a statement once per parameter set; the total number of rows changed."""

    async def fetch_all(self, sql: str, params: Params = None) -> list[Row]:
        """Run a query; all its rows."""

    async def fetch_one(self, sql: str, params: Params = None) -> Row | None:
        """Run a query; its first row, or None if it returned none."""

    async def fetch_value(self, sql: str, params: Params = None) -> Any:
        """Run a query; the first column of its first row, or None if it returned none."""


class DatasourceBackend(Protocol):
    """A connected (once opened) application database.

    ``open`` and ``close`` bracket one launch. Every other method raises the driver's own
    error for a database failure (classified by :meth:`failure_kind`), and
    :class:`~dbos_trio.DatabaseClosed` once closed.
    """

    @property
    def description(self) -> str:
        """What to call it in messages: the backend and its (password-free) location."""

    async def open(self) -> None:
        """Connect and migrate (or only verify); :class:`~dbos_trio.DBOSInitializationError`
        if it cannot. Cancellation closes whatever was opened."""

    async def close(self) -> None:
        """Release every connection. Idempotent."""

    async def run(
        self,
        isolation: IsolationLevel,
        body: Callable[[TransactionConnection], Awaitable[T]],
        target: CheckpointTarget | None,
    ) -> T:
        """One attempt: ``body`` in a transaction at ``isolation``, then (with ``target``)
        the checkpoint insert and the fence, then ``COMMIT``. Any exception or cancellation
        rolls it back (or discards the connection). :class:`StepAlreadyRecorded` if the
        checkpoint row was taken; :class:`TransactionOutcomeUnknown` if ``COMMIT``'s reply
        was lost."""

    async def record_error(self, target: CheckpointTarget, error: str, serialization: str) -> None:
        """Record a failed transaction's error as its checkpoint, in a transaction of its
        own, fenced like :meth:`run`; :class:`StepAlreadyRecorded` if the row was taken."""

    async def recorded(self, workflow_id: str, step_id: int) -> RecordedOutput | None:
        """The checkpoint recorded for this step, if any."""

    async def delete_checkpoints(
        self, workflow_id: str, *, from_step: int = 1, fence: Callable[[], Awaitable[None]]
    ) -> None:
        """Delete the workflow's checkpoints with ``step_id >= from_step``, committing only if
        ``fence`` (run after the delete) does not raise."""

    def failure_kind(self, error: BaseException) -> FailureKind | None:
        """Whether ``error`` is a lost serialization race (retry: the transaction rolled
        back), a lost connection (retry where the outcome is known), or neither."""
