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

import json
import logging
import math
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Literal, TypeVar

import attrs
import trio

from ._clock import Clock
from ._config import (
    redact_url,
    require_bool,
    require_database_url,
    require_optional_text,
    require_positive_int,
    require_positive_seconds,
    require_schema,
)
from ._errors import (
    DBOSConfigError,
    DBOSException,
    DBOSInitializationError,
    DBOSNonExistentWorkflowError,
)
from ._serialization import PICKLE, PORTABLE_JSON, Codec, PickleSerializer, Serializer
from .core.filters import normalize_filters
from .core.units import timeout_ms
from .engine import fork, management, waits
from .engine.executor import Runtime
from .engine.handle import StoredWorkflowHandle, unique_handles
from .engine.messages import send_message
from .engine.options import SetWorkflowTimeout
from .engine.queues import insert_queued
from .engine.rows import Placement, Writer, new_row
from .engine.start import check_same_workflow
from .engine.status import StepInfo, WorkflowStatus, step_info, workflow_status
from .engine.streams import is_end
from .sysdb.open import open_system_database
from .sysdb.records import WorkflowFilters
from .sysdb.wakeups import stream_key

logger = logging.getLogger("dbos_trio.client")

R = TypeVar("R")

# Priorities as dbos 3.4 bounds them (0, the default, means "no priority").
MIN_PRIORITY = 1
MAX_PRIORITY = 2**31 - 1

DuplicationPolicy = Literal["reject", "return-existing"]
SerializationChoice = Literal["portable", "native"]


def _optional_text(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise DBOSException(
            f"EnqueueOptions.{attribute.name}: {value!r} must be a non-empty string"
        )


def _required_text(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise DBOSException(
            f"EnqueueOptions.{attribute.name}: {value!r} must be a non-empty string"
        )


def _optional_seconds(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DBOSException(f"EnqueueOptions.{attribute.name}: {value!r} must be a finite number")


def _roles(value: Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise DBOSException("EnqueueOptions.authenticated_roles must be a list of role names")
    return tuple(value)


@attrs.frozen(kw_only=True)
class EnqueueOptions:
    """What to enqueue, where, and how (the fields of ``dbos`` 3.4's ``EnqueueOptions``).

    ``workflow_name`` is the registered name of the workflow (by default its function's
    ``__qualname__``); ``class_name`` and ``instance_name`` name a class-based workflow's
    class and configured instance. ``serialization="portable"`` writes the inputs as
    ``portable_json`` (readable by every SDK), ``"native"`` forces ``py_pickle``, and None
    uses the client's serializer.
    """

    workflow_name: str = attrs.field(validator=_required_text)
    queue_name: str = attrs.field(validator=_required_text)
    workflow_id: str | None = attrs.field(default=None, validator=_optional_text)
    app_version: str | None = attrs.field(default=None, validator=_optional_text)
    workflow_timeout: float | None = attrs.field(default=None, validator=_optional_seconds)
    delay_seconds: float | None = attrs.field(default=None, validator=_optional_seconds)
    deduplication_id: str | None = attrs.field(default=None, validator=_optional_text)
    duplication_policy: DuplicationPolicy | None = None
    priority: int | None = None
    queue_partition_key: str | None = attrs.field(default=None, validator=_optional_text)
    class_name: str | None = attrs.field(default=None, validator=_optional_text)
    instance_name: str | None = attrs.field(default=None, validator=_optional_text)
    serialization: SerializationChoice | None = None
    application_name: str | None = attrs.field(default=None, validator=_optional_text)
    authenticated_user: str | None = None
    authenticated_roles: tuple[str, ...] | None = attrs.field(default=None, converter=_roles)

    def __attrs_post_init__(self) -> None:
        if self.duplication_policy not in (None, "reject", "return-existing"):
            raise DBOSException(
                f"Invalid duplication_policy {self.duplication_policy}. "
                "Must be either 'reject' or 'return-existing'."
            )
        if self.duplication_policy == "return-existing" and self.deduplication_id is None:
            raise DBOSException("duplication_policy 'return-existing' requires a deduplication_id.")
        if self.priority is not None and (
            isinstance(self.priority, bool)
            or not isinstance(self.priority, int)
            or not MIN_PRIORITY <= self.priority <= MAX_PRIORITY
        ):
            raise DBOSException(
                f"Invalid priority {self.priority}. "
                f"Priority must be between {MIN_PRIORITY}~{MAX_PRIORITY}."
            )
        if self.serialization not in (None, "portable", "native"):
            raise DBOSException(
                f"serialization must be 'portable', 'native' or None, not {self.serialization!r}"
            )
        if self.workflow_timeout is not None and self.workflow_timeout <= 0:
            raise DBOSException(
                f"EnqueueOptions.workflow_timeout: {self.workflow_timeout!r} must be > 0"
            )


class ClientWorkflowHandle(StoredWorkflowHandle[R]):
    """A handle on a workflow, held by a client: its id, status and (polled) result.

    Nothing a client does is checkpointed, even from inside a workflow body.
    """


class Client:
    """A connection to a system database for enqueueing, messaging and managing workflows.

    ``async with Client(url, app_name="orders") as client:`` connects, verifies the schema
    (never creating or migrating it) and, with ``use_listen_notify``, LISTENs for the
    lifetime of the block; leaving the block closes everything.

    ``url`` is a ``postgresql://`` URL or the ``sqlite:///`` URL of an application's
    embedded system database (which must exist, migrated). On SQLite ``schema``,
    ``max_connections``, ``use_listen_notify`` and ``connect_timeout`` do not apply: the
    client opens one connection to the file and its waits poll (writes by an application
    in this process wake them at once, as they wake the application's own waiters).
    """

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
        self._url = database_url
        self._schema = schema
        self._app_name = app_name
        self._max_connections = max_connections
        self._use_listen_notify = use_listen_notify
        self._serializer = serializer if serializer is not None else PickleSerializer()
        self._outcome_poll_interval = float(outcome_poll_interval)
        self._connect_timeout = float(connect_timeout)
        self._runtime: Runtime | None = None
        self._stack: AsyncExitStack | None = None

    def __repr__(self) -> str:
        state = "open" if self._runtime is not None else "closed"
        return (
            f"Client({redact_url(self._url)!r}, schema={self._schema!r}, "
            f"app_name={self._app_name!r}, {state})"
        )

    @property
    def app_name(self) -> str | None:
        return self._app_name

    # --- lifetime --------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        if self._runtime is not None or self._stack is not None:
            raise DBOSException("this Client is already open")
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            try:
                # Verified, never migrated: a client does not create or change schemas.
                sysdb = await open_system_database(
                    self._url,
                    schema=self._schema,
                    max_connections=self._max_connections,
                    connect_timeout=self._connect_timeout,
                    run_migrations=False,
                    use_listen_notify=self._use_listen_notify,
                )
            except DBOSInitializationError as error:
                raise DBOSInitializationError(
                    f"Client (which never creates or migrates a system database): {error}"
                ) from None
            stack.push_async_callback(_close_shielded, sysdb)
            nursery = await stack.enter_async_context(trio.open_nursery())
            stack.callback(nursery.cancel_scope.cancel)
            for task in sysdb.background_tasks():
                await nursery.start(task)
            self._runtime = Runtime(
                sysdb=sysdb,
                codec=Codec(self._serializer),
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
        return await stack.__aexit__(exc_type, exc, tb)

    def _require(self, operation: str) -> Runtime:
        if self._runtime is None:
            raise DBOSException(f"Client.{operation}: the client is not open (use `async with`)")
        return self._runtime

    def _handle(self, workflow_id: str) -> ClientWorkflowHandle[Any]:
        return ClientWorkflowHandle(self._require("handle"), workflow_id)

    # --- enqueue ---------------------------------------------------------------------

    async def enqueue(
        self, options: EnqueueOptions, *args: Any, **kwargs: Any
    ) -> ClientWorkflowHandle[Any]:
        """Write an ENQUEUED (or, with a delay, DELAYED) row for the named workflow.

        The executor that serves ``options.queue_name`` runs it. A deduplication id
        already held on the queue raises :class:`DBOSQueueDeduplicatedError`, or with
        ``duplication_policy="return-existing"`` returns the holder's handle. An existing
        ``workflow_id`` returns that workflow's handle (if it names the same function).
        """
        runtime = self._require("enqueue")
        if not isinstance(options, EnqueueOptions):
            raise TypeError(f"enqueue needs EnqueueOptions, not {type(options).__name__}")
        codec, clock = runtime.codec, runtime.clock
        fmt = _format(codec, options.serialization)
        try:
            inputs = codec.encode_inputs(tuple(args), dict(kwargs), fmt)
        except Exception as error:
            raise DBOSException(
                f"cannot serialize the arguments of workflow {options.workflow_name} as "
                f"{fmt}: {error}"
            ) from error
        workflow_id = options.workflow_id or str(uuid.uuid4())
        new = new_row(
            workflow_id=workflow_id,
            name=options.workflow_name,
            class_name=options.class_name,
            config_name=options.instance_name,
            inputs=inputs,
            serialization=fmt,
            now_ms=clock.now_ms(),
            # No executor and no version unless asked: any executor of the application
            # may claim it.
            writer=Writer(
                executor_id=None,
                application_version=options.app_version,
                application_id=None,
                application_name=options.application_name or runtime.app_name,
            ),
            placement=Placement(
                queue_name=options.queue_name,
                deduplication_id=options.deduplication_id,
                priority=options.priority,
                partition_key=options.queue_partition_key,
                delay_seconds=options.delay_seconds,
            ),
            timeout_ms=None
            if options.workflow_timeout is None
            else timeout_ms(options.workflow_timeout),
            authenticated_user=options.authenticated_user,
            authenticated_roles=json.dumps(list(options.authenticated_roles))
            if options.authenticated_roles
            else None,
        )
        init = await insert_queued(runtime, new, None, options.duplication_policy)
        if isinstance(init, str):
            return self._handle(init)
        check_same_workflow(
            workflow_id, init, options.workflow_name, options.class_name, options.instance_name
        )
        if not init.created and (init.queue_name or None) != options.queue_name:
            logger.warning(
                "Workflow already exists in queue: %s, but the provided queue name is: %s. "
                "The queue is not updated.",
                init.queue_name,
                options.queue_name,
            )
        return self._handle(workflow_id)

    # --- messages, events, streams ---------------------------------------------------

    async def send(
        self,
        destination_id: str,
        message: Any,
        topic: str | None = None,
        idempotency_key: str | None = None,
        *,
        serialization: SerializationChoice | None = None,
    ) -> None:
        """Send ``message`` to a workflow (missing destination: ``DBOSNonExistentWorkflowError``).

        With an ``idempotency_key`` any number of sends leave one message.
        """
        runtime = self._require("send")
        fmt = _format(runtime.codec, serialization)
        try:
            encoded = runtime.codec.encode(message, fmt)
        except Exception as error:
            raise DBOSException(f"cannot serialize the message as {fmt}: {error}") from error
        await send_message(
            runtime, destination_id, encoded, fmt, topic, idempotency_key, caller=None
        )

    async def get_event(self, workflow_id: str, key: str, timeout_seconds: float = 60) -> Any:
        """The latest value of a workflow's event, waiting up to the timeout; None if unset."""
        runtime = self._require("get_event")

        async def deadline() -> float:
            return runtime.clock.now() + timeout_seconds

        found = await waits.wait_for_event(runtime, workflow_id, key, deadline)
        return None if found is None else runtime.codec.decode(found[0], found[1])

    async def read_stream(
        self,
        workflow_id: str,
        key: str,
        *,
        offset: int = 0,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[Any]:
        """``async for value in client.read_stream(id, key)``: values in order from
        ``offset`` until the stream is closed, or drained after its writer finished.

        With ``timeout_seconds``, waiting longer than that for any one value raises
        :class:`DBOSStreamTimeoutError`. A missing workflow raises
        :class:`DBOSNonExistentWorkflowError`.
        """
        runtime = self._require("read_stream")
        if timeout_seconds is not None and timeout_seconds < 0:
            raise ValueError(f"timeout_seconds must not be negative, got {timeout_seconds}")
        with runtime.wakeups.subscribe(stream_key(workflow_id, key)) as wakeup:
            while True:
                values = await waits.next_stream_values(
                    runtime, wakeup, workflow_id, key, offset, timeout_seconds=timeout_seconds
                )
                if not values:
                    return  # drained after the writer ended
                for value, fmt in values:
                    if is_end(value, fmt):
                        return
                    offset += 1
                    yield runtime.codec.decode(value, fmt)

    # --- handles and management ------------------------------------------------------

    async def retrieve_workflow(self, workflow_id: str) -> ClientWorkflowHandle[Any]:
        """A handle on an existing workflow (``DBOSNonExistentWorkflowError`` if none)."""
        runtime = self._require("retrieve_workflow")
        if await runtime.sysdb.get_outcome(workflow_id) is None:
            raise DBOSNonExistentWorkflowError("target", workflow_id)
        return self._handle(workflow_id)

    async def get_workflow_status(self, workflow_id: str) -> WorkflowStatus | None:
        runtime = self._require("get_workflow_status")
        row = await runtime.sysdb.get_workflow(workflow_id)
        return None if row is None else workflow_status(runtime.codec, row)

    async def cancel_workflow(self, workflow_id: str, *, cancel_children: bool = False) -> None:
        """Cancel an unfinished workflow; it stops at its next checkpoint wherever it runs."""
        await self.cancel_workflows([workflow_id], cancel_children=cancel_children)

    async def cancel_workflows(
        self, workflow_ids: Sequence[str], *, cancel_children: bool = False
    ) -> None:
        runtime = self._require("cancel_workflows")
        await management.cancel_workflows(
            runtime, list(workflow_ids), cancel_children=cancel_children
        )

    async def resume_workflow(
        self, workflow_id: str, *, queue_name: str | None = None
    ) -> ClientWorkflowHandle[Any]:
        """Re-enqueue an unfinished workflow (on ``queue_name`` or the internal queue)."""
        return (await self.resume_workflows([workflow_id], queue_name=queue_name))[0]

    async def resume_workflows(
        self, workflow_ids: Sequence[str], *, queue_name: str | None = None
    ) -> list[ClientWorkflowHandle[Any]]:
        runtime = self._require("resume_workflows")
        ids = list(workflow_ids)
        await management.resume_workflows(runtime, ids, queue_name=queue_name)
        return [self._handle(workflow_id) for workflow_id in ids]

    async def delete_workflow(self, workflow_id: str, *, delete_children: bool = False) -> None:
        runtime = self._require("delete_workflow")
        await management.delete_workflows(runtime, [workflow_id], delete_children=delete_children)

    async def set_workflow_delay(
        self,
        workflow_id: str,
        *,
        delay_seconds: float | None = None,
        delay_until_epoch_ms: int | None = None,
    ) -> None:
        """Move a DELAYED workflow's start to ``delay_seconds`` from now, or to
        ``delay_until_epoch_ms`` (exactly one of them); other workflows are left alone."""
        runtime = self._require("set_workflow_delay")
        if (delay_seconds is None) == (delay_until_epoch_ms is None):
            raise DBOSException("Specify either delay_seconds or delay_until_epoch_ms, not both")
        if delay_seconds is not None:
            if delay_seconds < 0:
                raise DBOSException("delay_seconds must be >= 0")
            await management.set_workflow_delay(runtime, workflow_id, delay_seconds)
            return
        assert delay_until_epoch_ms is not None
        if delay_until_epoch_ms < 0:
            raise DBOSException("delay_until_epoch_ms must be >= 0")
        await runtime.sysdb.set_workflow_delay(
            workflow_id, delay_until_epoch_ms, runtime.clock.now_ms()
        )

    async def fork_workflow(
        self,
        workflow_id: str,
        start_step: int,
        *,
        application_version: str | None = None,
        queue_name: str | None = None,
        queue_partition_key: str | None = None,
        timeout_seconds: float | None = None,
    ) -> ClientWorkflowHandle[Any]:
        """A new workflow that replays ``workflow_id``'s steps before ``start_step`` and
        re-runs the rest, enqueued on ``queue_name`` (default: the internal queue). Its id
        comes from an enclosing ``SetWorkflowID``, else it is fresh."""
        runtime = self._require("fork_workflow")
        with SetWorkflowTimeout(timeout_seconds):
            forked_id = await fork.fork_workflow(
                runtime,
                workflow_id,
                start_step,
                application_version=application_version,
                queue_name=queue_name,
                queue_partition_key=queue_partition_key,
            )
        return self._handle(forked_id)

    async def wait_first(
        self, handles: Sequence[ClientWorkflowHandle[Any]]
    ) -> ClientWorkflowHandle[Any]:
        """The first of ``handles`` whose workflow is no longer PENDING/ENQUEUED/DELAYED.

        Workflows finishing in a process this client shares a wakeup registry with wake it
        at once; others are found by polling every ``outcome_poll_interval``."""
        runtime = self._require("wait_first")
        by_id: dict[str, ClientWorkflowHandle[Any]] = unique_handles(handles)
        return by_id[await waits.first_finished(runtime, list(by_id))]

    # --- listing ---------------------------------------------------------------------

    async def list_workflows(self, **filters: Any) -> list[WorkflowStatus]:
        """Workflows matching the ``dbos`` 3.4 ``list_workflows`` filters, oldest first.

        Scoped like the official client: without an ``application_name`` filter, to the
        client's application plus unclaimed rows (every row for a nameless client, and for
        a lookup by ``workflow_ids``); with one, to that application plus unclaimed rows.
        """
        runtime = self._require("list_workflows")
        query = _client_filters(runtime, filters)
        rows = await runtime.sysdb.list_workflows(query)
        return [workflow_status(runtime.codec, row) for row in rows]

    async def list_queued_workflows(self, **filters: Any) -> list[WorkflowStatus]:
        """Workflows on a queue (DELAYED, ENQUEUED or PENDING unless ``status`` is given)."""
        if not filters.get("status"):
            filters["status"] = ["DELAYED", "ENQUEUED", "PENDING"]
        filters["queues_only"] = True
        return await self.list_workflows(**filters)

    async def list_workflow_steps(
        self,
        workflow_id: str,
        *,
        load_output: bool = True,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[StepInfo]:
        """The workflow's recorded steps in step-id order."""
        runtime = self._require("list_workflow_steps")
        steps = await runtime.sysdb.list_steps(workflow_id, limit=limit, offset=offset)
        return [
            step_info(runtime.codec, workflow_id, step, load_output=load_output) for step in steps
        ]


async def _close_shielded(sysdb: Any) -> None:
    with trio.CancelScope(shield=True):
        await sysdb.close()


def _format(codec: Codec, serialization: SerializationChoice | None) -> str:
    if serialization == "portable":
        return PORTABLE_JSON
    if serialization == "native":
        return PICKLE
    if serialization is not None:
        raise DBOSException(
            f"serialization must be 'portable', 'native' or None, not {serialization!r}"
        )
    return codec.default_format


def _client_filters(runtime: Runtime, filters: dict[str, Any]) -> WorkflowFilters:
    filters = dict(filters)
    application = filters.pop("application_name", None)
    normalized = normalize_filters(filters)
    if application is not None:
        names = [application] if isinstance(application, str) else list(application)
        if len(names) == 1:
            normalized["scope_application"] = names[0]
        elif names:
            normalized["application_names"] = tuple(names)
    elif runtime.app_name is not None and "workflow_ids" not in normalized:
        normalized["scope_application"] = runtime.app_name
    return WorkflowFilters(**normalized)
