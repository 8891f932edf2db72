"""``Client``: reach a DBOS application's system database from another process.

A client runs no workflow code and never migrates: it verifies that the schema is there
(at the version this package needs) and then works on the rows directly, exactly as the
official SDKs' clients do, so a workflow it enqueues is indistinguishable from one
enqueued inside the application, and whichever executor serves the queue — dbos_trio or
any official SDK — runs it by name.

Invariants, and why:

* Nothing a client does is checkpointed, even when it is used from inside a workflow
  body: it is an outside observer, like the official ``DBOSClient``. So it does not go
  through the engine paths that consult the running workflow's context (``send``,
  ``get_event``, ``read_stream`` are written here for the no-context case), only through
  the ones that never do (outcome waits, management).
* Enqueued rows carry no executor id and no application version unless the options give
  one (any executor of the application may then claim them), and the application named
  by the options, else the client's, else none: a NULL ``application_name`` is an
  unclaimed row that whichever application dequeues it adopts.
* Waits subscribe before they look and re-check the database on a bounded interval, so
  they are correct with ``use_listen_notify=False`` or when a notification is lost; with
  LISTEN they are woken at once by the messages trigger and the peers' event and stream
  notifications. Workflow completion has no notification: results are polled every
  ``outcome_poll_interval``.
"""

from __future__ import annotations

from dbos_trio._client.admin import ClientAdmin
from dbos_trio._client.base import ClientWorkflowHandle
from dbos_trio._client.connection import ClientConnection
from dbos_trio._client.debouncing import ClientDebouncer, ClientDebouncing
from dbos_trio._client.listing import ClientListing
from dbos_trio._client.messaging import ClientMessaging
from dbos_trio._client.operations import ClientOperations
from dbos_trio._client.options import EnqueueOptions
from dbos_trio._client.queues import ClientQueue, ClientQueues
from dbos_trio._client.schedules import ClientSchedules
from dbos_trio._client.transactional import ClientTransactional
from dbos_trio._client.versions import ClientVersions


class Client(
    ClientMessaging,
    ClientListing,
    ClientSchedules,
    ClientDebouncing,
    ClientVersions,
    ClientOperations,
    ClientTransactional,
    ClientQueues,
    ClientAdmin,
    ClientConnection,
):
    """A connection to a system database for enqueueing, messaging and managing workflows.

    ``async with Client(url, app_name="orders") as client:`` connects, verifies the schema
    (never creating or migrating it) and, with ``use_listen_notify``, LISTENs for the
    lifetime of the block; leaving the block closes everything. An exception raised in the
    block leaves it as itself (never wrapped in a one-exception group); cancellation of the
    block closes the client as a normal exit does.

    ``url`` is a ``postgresql://`` URL or the ``sqlite:///`` URL of an application's
    embedded system database (which must exist, migrated). On SQLite ``schema``,
    ``max_connections``, ``use_listen_notify`` and ``connect_timeout`` do not apply: the
    client opens one connection to the file and its waits poll (writes by an application
    in this process wake them at once, as they wake the application's own waiters).

    Like an executor, a client retries a transient database failure (a lost connection, a
    restarting server) until the database is back, unless ``database_retry_limit`` bounds
    it; ``direct_database_url``, ``prepared_statements``, ``allow_pickle`` (False: refuse
    to read ``py_pickle`` payloads, which run code of whoever wrote them),
    ``max_value_bytes`` (the largest value an enqueue or send stores), ``payload_store``
    and ``payload_store_threshold`` (values kept once outside the rows; without the store
    the application uses, a client cannot read the values it holds),
    ``statement_timeout``, ``idle_in_transaction_session_timeout`` and ``group_commit``
    (concurrent enqueues, sends and other writes of the client share commits; each call
    still returns only once its own write committed) are as in :class:`~dbos_trio.Config`.

    Entering the block raises :class:`~dbos_trio.DBOSInitializationError` if the database
    cannot be opened (:class:`~dbos_trio.SystemDatabaseUnreachable` when no
    connection could be made) or its schema is not migrated; cancellation while entering
    closes whatever was opened. No error, log line or ``repr`` shows the URL's password.

    Every method: each transaction it makes commits whole or not at all, so cancelling a
    call (``trio.Cancelled``) never leaves half a write; a bad argument raises
    :class:`~dbos_trio.DBOSInvalidArgumentError` (or ``DBOSArgumentTypeError``) before
    anything is written; a database failure raises
    :class:`~dbos_trio.SystemDatabaseError` once the retries run out; a call outside the
    ``async with`` block raises :class:`~dbos_trio.DBOSException`.
    """


__all__ = ["Client", "ClientDebouncer", "ClientQueue", "ClientWorkflowHandle", "EnqueueOptions"]
