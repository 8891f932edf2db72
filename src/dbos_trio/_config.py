"""Configuration: validated when constructed, before anything connects.

A bad value raises :class:`~dbos_trio.DBOSConfigError` naming the field, at ``Config(...)``,
so a typo never costs a connection attempt or leaves half a launch behind (the checks, which
``Client`` shares, are :mod:`dbos_trio._config_checks`; they are re-exported here, their
former home, in ``__all__``). The URL's password never appears in ``repr``, in a message or
in logs (:func:`redact_url`, from :mod:`dbos_trio._redact`; a URL is never shown by
``repr()`` of its raw text).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import attrs

from dbos_trio._config_checks import (
    APP_NAME_PATTERN,
    DEFAULT_ADOPTION_SECONDS,
    DEFAULT_HEARTBEAT_INTERVAL,
    check_app_name,
    check_log_level,
    check_otel_format,
    check_retention,
    check_serializer,
    check_sync_commit,
    check_unordered_tasks,
    config_error,
    field_check,
    queue_names,
    require_bool,
    require_database_url,
    require_optional_seconds,
    require_optional_text,
    require_positive_int,
    require_positive_seconds,
    require_schema,
    require_value_limit,
)
from dbos_trio._core.retention import RetentionPolicy
from dbos_trio._payload_store import PayloadStore, require_payload_store
from dbos_trio._redact import redact_url  # re-exported: the name's old home
from dbos_trio._serialization import (
    DEFAULT_MAX_VALUE_BYTES,
    DEFAULT_PAYLOAD_STORE_THRESHOLD,
    PickleSerializer,
    Serializer,
)

SYSTEM_DATABASE_URL_ENV = "DBOS_SYSTEM_DATABASE_URL"
DATABASE_URL_ENV = "DBOS_DATABASE_URL"
APP_VERSION_ENV = "DBOS__APPVERSION"
EXECUTOR_ID_ENV = "DBOS__VMID"
APP_ID_ENV = "DBOS__APPID"
DEFAULT_EXECUTOR_ID = "local"

__all__ = [
    "APP_ID_ENV",
    "APP_NAME_PATTERN",
    "APP_VERSION_ENV",
    "DATABASE_URL_ENV",
    "DEFAULT_ADOPTION_SECONDS",
    "DEFAULT_EXECUTOR_ID",
    "DEFAULT_HEARTBEAT_INTERVAL",
    "EXECUTOR_ID_ENV",
    "SYSTEM_DATABASE_URL_ENV",
    "Config",
    "redact_url",
    "require_bool",
    "require_database_url",
    "require_optional_seconds",
    "require_optional_text",
    "require_positive_int",
    "require_positive_seconds",
    "require_schema",
    "require_value_limit",
]


@attrs.frozen(kw_only=True)
class Config:
    """How a :class:`~dbos_trio.DBOS` instance connects and identifies itself.

    Every field is checked when the ``Config`` is made: a bad value raises
    :class:`~dbos_trio.DBOSConfigError` naming the field (``Config.schema: ...``) before
    anything connects. A ``Config`` is frozen; ``repr`` never shows a URL's password.

    Fields (keyword-only; each is described in full in the API reference):

    - ``app_name`` (required): the application's name, stored on its workflows.
    - ``database_url`` [None]: ``postgresql://`` or ``sqlite:///`` URL; None reads
      ``DBOS_SYSTEM_DATABASE_URL``, ``DBOS_DATABASE_URL``, else ``<app_name>.sqlite``.
    - ``schema`` ["dbos"]: the PostgreSQL schema of the system tables.
    - ``app_version`` [None]: ``DBOS__APPVERSION``, else a hash of the workflows' source.
    - ``executor_id`` [None]: ``DBOS__VMID``, else ``"local"``; what launch recovers.
    - ``max_connections`` [10]: the PostgreSQL pool size.
    - ``use_listen_notify`` [True]: wake waiters by LISTEN/NOTIFY (False: poll).
    - ``run_migrations`` [True]: migrate at launch (False: only verify the schema).
    - ``listen_queues`` [None]: the queues this executor serves (None: all).
    - ``serializer`` [PickleSerializer()]: how payloads are written.
    - ``outcome_poll_interval`` [1.0]: seconds between re-reads of another process's result.
    - ``connect_timeout`` [10.0]: seconds per PostgreSQL connection attempt.
    - ``notification_coalesce`` [0.01]: seconds NOTIFYs are gathered into one statement.
    - ``direct_database_url`` [None]: a direct server URL for migrations and LISTEN
      (behind PgBouncer in transaction mode).
    - ``prepared_statements`` [True]: server-side prepared statements.
    - ``allow_pickle`` [True]: read ``py_pickle`` payloads (which run their writer's code).
    - ``max_value_bytes`` [16 MiB]: the largest serialized value stored (None: no limit).
    - ``payload_store`` [None]: where values over ``payload_store_threshold`` [64 KiB]
      are kept once each, the row holding a reference (docs/how-to/payload-store.md).
    - ``database_retry_limit`` [None]: seconds a call retries a transient database
      failure before it raises (None: until the database is back).
    - ``scheduler_polling_interval_sec`` [30.0]: how often schedules are re-read.
    - ``unordered_tasks`` ["error"]: durable calls from plain Trio tasks raise, or "warn".
    - ``heartbeat_interval`` [10.0]: seconds between stamps of the rows this executor runs.
    - ``adopt_dead_executors_after`` [60.0, or six heartbeat intervals if longer]: seconds
      of silence after which this executor takes over another dbos_trio executor's PENDING
      rows (None: only ``recover_executor`` does).
    - ``log_level`` ["INFO"]: the level of the stderr log launch sets up when nothing
      else configured logging (None: leave logging alone).
    - ``enable_otel`` [False]: OpenTelemetry spans (the ``otel`` extra).
    - ``otel_attribute_format`` ["legacy"]: span attribute names, "legacy" or "semconv".
    - ``otel_tracer_provider`` [None]: the TracerProvider spans go to (None: the global).
    - ``enable_metrics`` [False]: Prometheus metrics (the ``metrics`` extra).
    - ``metrics_registry`` [None]: the CollectorRegistry to register in (None: one per launch).
    - ``retention`` [None]: a RetentionPolicy deleting old finished workflows in the background.
    - ``shutdown_drain_seconds`` [None]: seconds running workflows may finish at exit.
    - ``statement_timeout`` [30.0]: seconds a listing query may run (PostgreSQL; None: no bound).
    - ``idle_in_transaction_session_timeout`` [60.0]: seconds an idle open transaction lives.
    - ``synchronous_commit`` [None]: PostgreSQL's setting for this executor's connections.
    - ``group_commit`` [True]: concurrent workflows' step checkpoints share commits.
    """

    app_name: str = attrs.field(validator=check_app_name)
    """The application's name (3-256 of ``a-z 0-9 _ -``), stored on every workflow row it
    starts: listings, recovery and queues are scoped by it. Required."""
    database_url: str | None = attrs.field(
        default=None, validator=field_check(require_database_url), repr=redact_url
    )
    """The system database: ``postgresql://...`` or ``sqlite:///path``. None (the default)
    reads ``DBOS_SYSTEM_DATABASE_URL``, then ``DBOS_DATABASE_URL``, then uses the embedded
    SQLite file ``<app_name>.sqlite`` in the working directory."""
    schema: str = attrs.field(default="dbos", validator=field_check(require_schema))
    """The PostgreSQL schema of the system tables (``dbos``, as every SDK's default). Not
    used on SQLite."""
    app_version: str | None = attrs.field(
        default=None, validator=field_check(require_optional_text)
    )
    """The version stamped on workflows this executor starts; only workflows of its own
    version are recovered or dequeued by it. None: ``DBOS__APPVERSION``, else a hash of
    the registered workflows' source (a code change is a new version). See the versions
    page of the documentation."""
    executor_id: str | None = attrs.field(
        default=None, validator=field_check(require_optional_text)
    )
    """This process's executor id, stored on the workflows it runs; at launch it recovers
    the PENDING workflows of its own id. None: ``DBOS__VMID``, else ``"local"``. Give each
    of several executors sharing a database its own id."""
    max_connections: int = attrs.field(default=10, validator=field_check(require_positive_int))
    """The size of the PostgreSQL connection pool (LISTEN uses one more, of its own). Not
    used on SQLite."""
    use_listen_notify: bool = attrs.field(default=True, validator=field_check(require_bool))
    """Wake waiters (``recv``, ``get_event``, streams, queues) by PostgreSQL LISTEN/NOTIFY;
    False polls instead (for a server or pooler without LISTEN). Not used on SQLite."""
    run_migrations: bool = attrs.field(default=True, validator=field_check(require_bool))
    """Create or upgrade the system schema at launch (under a lock, so concurrent launches
    are safe). False only verifies it and fails launch with
    :class:`~dbos_trio.DBOSInitializationError` if it is behind; migrate it with
    ``dbos-trio migrate``."""
    listen_queues: tuple[str, ...] | None = attrs.field(default=None, converter=queue_names)
    """The queues this executor dequeues from (plus the internal queue); None, the
    default, serves every queue of the application."""
    serializer: Serializer = attrs.field(factory=PickleSerializer, validator=check_serializer)
    """How inputs, outputs, errors, messages and events are written (``py_pickle`` by
    default, like the official Python SDK). Reading always follows each payload's stored
    format; :class:`~dbos_trio.PortableJSONSerializer` is readable by every SDK."""
    outcome_poll_interval: float = attrs.field(
        default=1.0, validator=field_check(require_positive_seconds)
    )
    """Seconds between re-reads while awaiting a workflow that runs in another process
    (completion has no notification in any SDK); one running here wakes its waiters at
    once."""
    connect_timeout: float = attrs.field(
        default=10.0, validator=field_check(require_positive_seconds)
    )
    """Seconds one PostgreSQL connection attempt may take. Not used on SQLite."""
    notification_coalesce: float = attrs.field(
        default=0.01, validator=field_check(require_positive_seconds)
    )
    """Seconds during which NOTIFYs this process sends are gathered into one statement (a
    burst of sends costs one round trip). Not used on SQLite."""
    direct_database_url: str | None = attrs.field(
        default=None, validator=field_check(require_database_url), repr=redact_url
    )
    """A PostgreSQL URL that reaches the server directly, for what needs a session of its
    own: migrations (a session advisory lock) and LISTEN. Set it when ``database_url`` goes
    through PgBouncer in transaction-pooling mode; None (the default) uses ``database_url``."""
    prepared_statements: bool = attrs.field(default=True, validator=field_check(require_bool))
    """Server-side prepared statements for the hot statements (the default). Turn them off
    behind PgBouncer in transaction-pooling mode before 1.21, which does not support them."""
    group_commit: bool = attrs.field(default=True, validator=field_check(require_bool))
    """Coalesce step checkpoints of concurrent workflows in this process into shared
    commits (the default): each is still durable before its workflow goes on, fenced per
    row, and one's failure affects no other. The batch is whatever waited while the
    previous commit ran, so a lone workflow writes alone, as with False."""
    allow_pickle: bool = attrs.field(default=True, validator=field_check(require_bool))
    """Whether this process reads ``py_pickle`` payloads (the default). Unpickling runs
    code of whoever wrote the payload, so anyone who can write the system database can run
    code in an executor that reads pickles. False is portable-only mode: pickled payloads
    are refused with :class:`~dbos_trio.DBOSPayloadError` (and the serializer must then not
    write them either: use :class:`~dbos_trio.PortableJSONSerializer`)."""
    max_value_bytes: int | None = attrs.field(
        default=DEFAULT_MAX_VALUE_BYTES, validator=field_check(require_value_limit)
    )
    """The largest value this process stores, in bytes once serialized (16 MiB by default;
    None: no limit; at least 8 KiB): workflow inputs and outputs, step outputs, messages,
    events and stream values. A larger one raises :class:`~dbos_trio.DBOSValueTooLargeError`
    naming the value, its size and this limit, before anything is written (a workflow whose
    output is too large ends in ERROR with that error); an error over it is stored
    shortened. Every recovery and listing reads these rows: keep large data elsewhere and
    pass a reference (docs/input-and-trust.md)."""
    payload_store: PayloadStore | None = None
    """Opt-in: a :class:`~dbos_trio.PayloadStore` keeping each value over
    ``payload_store_threshold`` once, by hash, the row a reference; official SDKs read it
    as the value: only where every reader is dbos_trio (docs/how-to/payload-store.md)."""
    payload_store_threshold: int = DEFAULT_PAYLOAD_STORE_THRESHOLD
    """Bytes over which a value goes to the store (64 KiB; at least 1 KiB; < max_value_bytes)."""
    database_retry_limit: float | None = attrs.field(
        default=None, validator=field_check(require_optional_seconds)
    )
    """How long one system-database call keeps retrying a transient failure (connection
    lost, server restarting, a lock conflict) before it raises; None, the default, retries
    for as long as the executor lives, like the official SDK. A workflow whose call gave up
    stays PENDING and is run again by the executor's sweep once the database is back."""
    scheduler_polling_interval_sec: float = attrs.field(
        default=30.0, validator=field_check(require_positive_seconds)
    )
    """How often the scheduler re-reads the schedules table (every second during the first
    minute after launch): a schedule created, paused, resumed, changed or deleted by another
    process takes effect within this long. Changes made through this executor take effect
    at once."""

    unordered_tasks: str = attrs.field(default="error", validator=check_unordered_tasks)
    """What a durable call made from a plain Trio task inside a workflow does — a task of
    ``trio.open_nursery()`` rather than ``dbos.open_nursery()``, whose step id would
    depend on how Trio happens to schedule it: ``"error"`` (the default) raises
    :class:`~dbos_trio.DBOSUnorderedTaskError` naming the call; ``"warn"`` logs a warning
    once per workflow execution and takes the next id, as the official SDK does."""

    heartbeat_interval: float = attrs.field(
        default=DEFAULT_HEARTBEAT_INTERVAL, validator=field_check(require_positive_seconds)
    )
    """How often this executor stamps ``updated_at`` on the PENDING rows it is running: the
    liveness other executors read before they adopt or recover rows (a row touched within
    three intervals is taken to be running, and is left alone). Use one value across the
    executors of an application."""
    adopt_dead_executors_after: float | None = attrs.field(
        default=attrs.Factory(
            lambda config: max(DEFAULT_ADOPTION_SECONDS, 6 * config.heartbeat_interval),
            takes_self=True,
        ),
        validator=field_check(require_optional_seconds),
    )
    """Seconds of silence after which this executor re-enqueues the PENDING rows of another
    dbos_trio executor of its application none of whose rows was stamped for that long (at
    least three heartbeat intervals), so a dead machine's work runs without anyone acting
    and without it coming back. The default is 60 s (six heartbeat intervals if those are
    longer). Only silence this executor was connected to observe counts (after an outage of
    its own it waits the whole window again), and only executors that stamp their rows are
    judged: an official SDK executor beside it is never adopted. None: only
    ``recover_executor`` moves another executor's work. docs/versions.md says why these are
    safe under outages and partitions."""

    log_level: str | None = attrs.field(default="INFO", validator=check_log_level)
    """The library's log on stderr, as the official SDK's: when nothing has configured
    logging at launch (no handler on the root or the ``dbos_trio`` logger), launch installs
    :func:`~dbos_trio.configure_logging` at this level, so the launch and shutdown lines,
    failures and warnings are seen. Configure logging before launch to route them
    elsewhere; None leaves logging alone (then only warnings reach stderr, by Python's
    last-resort handler)."""
    enable_otel: bool = attrs.field(default=False, validator=field_check(require_bool))
    """OpenTelemetry spans for every workflow and durable call (the ``otel`` extra): see
    docs/observability.md. Off (the default), nothing imports ``opentelemetry``."""
    otel_attribute_format: str = attrs.field(default="legacy", validator=check_otel_format)
    """Span attribute names: ``"legacy"`` (``operationUUID``..., as the TypeScript SDK)
    or ``"semconv"`` (``dbos.operation.workflow_id``...)."""
    otel_tracer_provider: Any = attrs.field(default=None, repr=False)
    """The ``TracerProvider`` spans go to; None (the default): the global one."""
    enable_metrics: bool = attrs.field(default=False, validator=field_check(require_bool))
    """Prometheus metrics of the executor (the ``metrics`` extra, prometheus-client)."""
    metrics_registry: Any = attrs.field(default=None, repr=False)
    """The ``prometheus_client.CollectorRegistry`` metrics register in while launched;
    None (the default): a fresh one per launch (read it with ``dbos.metrics_text()``)."""

    retention: RetentionPolicy | None = attrs.field(default=None, validator=check_retention)
    """A :class:`~dbos_trio.RetentionPolicy`: finished workflows older than its bounds are
    deleted in the background, by one executor of the application at a time; None (the
    default) keeps every row. See ``docs/operations.md``."""
    shutdown_drain_seconds: float | None = attrs.field(
        default=None, validator=field_check(require_optional_seconds)
    )
    """On exit from ``launched()``: stop claiming queued work and let the workflows running
    here finish for up to this long (Trio clock) before cancelling the rest, which stay
    PENDING for recovery. None (the default) cancels at once. ``launched(drain_seconds=)``
    overrides it for one launch."""

    statement_timeout: float | None = attrs.field(
        default=30.0, validator=field_check(require_optional_seconds)
    )
    """PostgreSQL: the longest a listing query (``list_workflows``,
    ``list_queued_workflows``) may run before the server cancels it and the call raises
    :class:`~dbos_trio.DBOSQueryTimeoutError` (the official SDK's
    ``observability_query_timeout_sec``, default 30 s); None: the server's setting.
    Workflow statements are never bounded this way."""
    idle_in_transaction_session_timeout: float | None = attrs.field(
        default=60.0, validator=field_check(require_optional_seconds)
    )
    """PostgreSQL: set on every connection of the pool and the listener, so a
    transaction left open (a stuck client) is ended by the server rather than holding its
    locks (official default 60 s); None leaves the server's setting."""
    synchronous_commit: str | None = attrs.field(default=None, validator=check_sync_commit)
    """PostgreSQL: ``synchronous_commit`` for every connection of the system database
    ("on", "remote_apply", "remote_write", "local" or "off"); None leaves the server's
    setting. With a streaming standby named in the server's ``synchronous_standby_names``,
    "remote_apply" (or "on") makes every enqueue, send and outcome wait until the standby
    has it, so a failover to that standby loses none of them; with an asynchronous standby
    a failover can lose the last acknowledged ones (docs/concepts/executors.md,
    ``dbos-trio doctor`` says which this server is)."""

    def __attrs_post_init__(self) -> None:
        require_payload_store(
            self.payload_store, self.payload_store_threshold, self.max_value_bytes, "Config."
        )
        if (
            self.adopt_dead_executors_after is not None
            and self.adopt_dead_executors_after < 3 * self.heartbeat_interval
        ):
            raise config_error(
                "Config.adopt_dead_executors_after",
                f"{self.adopt_dead_executors_after!r} s is under three heartbeat intervals "
                f"({3 * self.heartbeat_interval!r} s): live executors' work would be adopted",
            )
        for enabled, field, module, extra in (
            (self.enable_otel, "enable_otel", "opentelemetry", "otel"),
            (self.enable_metrics, "enable_metrics", "prometheus_client", "metrics"),
        ):
            if enabled and importlib.util.find_spec(module) is None:
                raise config_error(
                    f"Config.{field}",
                    f"True, but {module} is not installed: pip install 'dbos-trio[{extra}]'",
                )
        if not self.allow_pickle and self.serializer.name() == "py_pickle":
            raise config_error(
                "Config.allow_pickle",
                "False, but the serializer writes py_pickle, which this process would then "
                "refuse to read back: configure serializer=PortableJSONSerializer()",
            )

    def resolved_database_url(self) -> str:
        """The URL launch connects to: config, then environment, then the embedded file."""
        if self.database_url is not None:
            return self.database_url
        for variable in (SYSTEM_DATABASE_URL_ENV, DATABASE_URL_ENV):
            value = os.environ.get(variable)
            if value:
                return value
        return f"sqlite:///{self.app_name}.sqlite"
