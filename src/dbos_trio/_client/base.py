"""The connection half of :class:`~dbos_trio.Client`: opening, closing, and its state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self, TypeVar

import trio

from dbos_trio._clock import Clock
from dbos_trio._config import (
    require_bool,
    require_database_url,
    require_optional_seconds,
    require_optional_text,
    require_positive_int,
    require_positive_seconds,
    require_schema,
    require_value_limit,
)
from dbos_trio._core.ending import collapse
from dbos_trio._engine.state import Runtime
from dbos_trio._engine.workflows.handle import StoredWorkflowHandle
from dbos_trio._ops.reach import unrecorded
from dbos_trio._payload_store import PayloadStore, require_payload_store
from dbos_trio._redact import Scrubber, redact_url
from dbos_trio._serialization import (
    DEFAULT_MAX_VALUE_BYTES,
    DEFAULT_PAYLOAD_STORE_THRESHOLD,
    Codec,
    PickleSerializer,
    Serializer,
)
from dbos_trio._sysdb.open import BackendOptions, open_system_database
from dbos_trio._sysdb.retry import EXECUTOR_POLICY
from dbos_trio.errors import DBOSConfigError, DBOSException, DBOSInitializationError

R = TypeVar("R")
T = TypeVar("T")


class ClientWorkflowHandle(StoredWorkflowHandle[R]):
    """A handle on a workflow, held by a client: its id, status and (polled) result.

    Nothing a client does is checkpointed, even from inside a workflow body. The handle
    reaches the database through its client while the client is open (reopened, too);
    outside the client's ``async with`` block a call raises
    :class:`~dbos_trio.DBOSException` saying so.
    """

    def __init__(self, client: ClientBase, workflow_id: str) -> None:
        super().__init__(client._require("handle"), workflow_id)
        self._client = client

    def _reach(self, operation: str) -> Runtime:
        return self._client._require(f"handle {operation}")


class ClientReach:
    """``Client``'s :class:`~dbos_trio._ops.reach.Reach` (and the command line's): the
    client's runtime while it is open, and nothing ever checkpointed."""

    def __init__(self, client: ClientBase) -> None:
        self._client = client

    def runtime(self, operation: str) -> Runtime:
        """The client's runtime; :class:`~dbos_trio.DBOSException` naming ``operation``
        outside its ``async with`` block."""
        return self._client._require(operation)

    def checkpoint(
        self, step_name: str, operation: Callable[[], Awaitable[T]]
    ) -> Coroutine[Any, Any, T]:
        """``operation``, run as it is: a client is an outside observer."""
        return unrecorded(step_name, operation)


class ClientBase:
    """The state of a client: its URL and options, and, while open, its runtime."""

    def __init__(
        self,
        database_url: str,
        *,
        schema: str = "dbos",
        app_name: str | None = None,
        max_connections: int = 5,
        use_listen_notify: bool = True,
        serializer: Serializer | None = None,
        outcome_poll_interval: float = 1.0,
        connect_timeout: float = 10.0,
        database_retry_limit: float | None = None,
        direct_database_url: str | None = None,
        prepared_statements: bool = True,
        allow_pickle: bool = True,
        statement_timeout: float | None = 30.0,
        max_value_bytes: int | None = DEFAULT_MAX_VALUE_BYTES,
        payload_store: PayloadStore | None = None,
        payload_store_threshold: int = DEFAULT_PAYLOAD_STORE_THRESHOLD,
        idle_in_transaction_session_timeout: float | None = 60.0,
        group_commit: bool = True,
    ) -> None:
        # The same rules as Config's, before anything connects.
        if database_url is None:
            raise DBOSConfigError(
                "Client database_url: None must be a postgresql:// or sqlite:/// URL"
            )
        require_database_url(database_url, "Client database_url")
        require_schema(schema, "Client schema")
        require_optional_text(app_name, "Client app_name")
        require_positive_int(max_connections, "Client max_connections")
        require_bool(use_listen_notify, "Client use_listen_notify")
        require_positive_seconds(outcome_poll_interval, "Client outcome_poll_interval")
        require_positive_seconds(connect_timeout, "Client connect_timeout")
        require_optional_seconds(database_retry_limit, "Client database_retry_limit")
        require_database_url(direct_database_url, "Client direct_database_url")
        require_bool(prepared_statements, "Client prepared_statements")
        require_bool(allow_pickle, "Client allow_pickle")
        require_bool(group_commit, "Client group_commit")
        self._group_commit = group_commit
        require_value_limit(max_value_bytes, "Client max_value_bytes")
        self._max_value_bytes = max_value_bytes
        require_payload_store(payload_store, payload_store_threshold, max_value_bytes, "Client ")
        self._payload_store = payload_store
        self._payload_store_threshold = payload_store_threshold
        require_optional_seconds(statement_timeout, "Client statement_timeout")
        require_optional_seconds(
            idle_in_transaction_session_timeout, "Client idle_in_transaction_session_timeout"
        )
        self._statement_timeout = statement_timeout
        self._idle_in_transaction_timeout = idle_in_transaction_session_timeout
        self._url = database_url
        self._schema = schema
        self._app_name = app_name
        self._max_connections = max_connections
        self._use_listen_notify = use_listen_notify
        self._serializer = serializer if serializer is not None else PickleSerializer()
        self._outcome_poll_interval = float(outcome_poll_interval)
        self._connect_timeout = float(connect_timeout)
        self._retry = EXECUTOR_POLICY.bounded(database_retry_limit)
        self._direct_url = direct_database_url
        self._prepared_statements = prepared_statements
        self._allow_pickle = allow_pickle
        self._runtime: Runtime | None = None
        self._stack: AsyncExitStack | None = None
        # How the shared operations (dbos_trio._ops) reach the database from this face.
        self._reach = ClientReach(self)

    def __repr__(self) -> str:
        state = "open" if self._runtime is not None else "closed"
        return (
            f"Client({redact_url(self._url)!r}, schema={self._schema!r}, "
            f"app_name={self._app_name!r}, {state})"
        )

    @property
    def app_name(self) -> str | None:
        """The application this client acts for (None: every application's rows)."""
        return self._app_name

    # --- lifetime --------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._runtime is not None or self._stack is not None:
            raise DBOSException("this Client is already open")
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            try:
                # Verified, never migrated: a client does not create or change schemas.
                sysdb = await open_system_database(
                    self._url,
                    BackendOptions(
                        schema=self._schema,
                        max_connections=self._max_connections,
                        connect_timeout=self._connect_timeout,
                        run_migrations=False,
                        use_listen_notify=self._use_listen_notify,
                        retry=self._retry,
                        direct_url=self._direct_url,
                        prepared_statements=self._prepared_statements,
                        statement_timeout=self._statement_timeout,
                        idle_in_transaction_timeout=self._idle_in_transaction_timeout,
                        group_commit=self._group_commit,
                    ),
                )
            except DBOSInitializationError as error:
                # Same class (a SystemDatabaseUnreachable stays one), scrubbed once more
                # (the backend already did): this text reaches users.
                scrub = Scrubber.for_urls(self._url, self._direct_url)
                raise type(error)(
                    "Client (which never creates or migrates a system database): "
                    + scrub(error.detail)
                ) from None
            stack.push_async_callback(_close_shielded, sysdb)
            nursery = await stack.enter_async_context(trio.open_nursery())
            stack.callback(nursery.cancel_scope.cancel)
            for task in sysdb.background_tasks():
                await nursery.start(task)
            self._runtime = Runtime(
                sysdb=sysdb,
                codec=Codec(
                    self._serializer,
                    allow_pickle=self._allow_pickle,
                    max_value_bytes=self._max_value_bytes,
                    setting="Client max_value_bytes",
                    payload_store=self._payload_store,
                    payload_store_threshold=self._payload_store_threshold,
                ),
                clock=Clock(),
                app_name=self._app_name,
                outcome_poll_interval=self._outcome_poll_interval,
            )
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack, self._runtime = self._stack, None, None
        if stack is None:
            return None
        try:
            return await stack.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            # The client's nursery wraps whatever the body raised; a block that raised one
            # exception gets that exception back, so ``except SomeError:`` around it works.
            collapsed = collapse(group)
            if collapsed is group:
                raise
        if collapsed is exc:
            return False
        raise collapsed

    def _require(self, operation: str) -> Runtime:
        if self._runtime is None:
            raise DBOSException(f"Client.{operation}: the client is not open (use `async with`)")
        return self._runtime

    def _handle(self, workflow_id: str) -> ClientWorkflowHandle[Any]:
        return ClientWorkflowHandle(self, workflow_id)


async def _close_shielded(sysdb: Any) -> None:
    with trio.CancelScope(shield=True):
        await sysdb.close()
