"""Configuration: validated when constructed, before anything connects.

A bad value raises :class:`DBOSConfigError` naming the field, at ``Config(...)``, so a
typo never costs a connection attempt or leaves half a launch behind. The URL's password
never appears in ``repr``, in a message or in logs (:func:`redact_url`, from
:mod:`dbos_trio._redact`; a URL is never shown by ``repr()`` of its raw text).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from typing import Any

import attrs

from ._errors import DBOSConfigError, DBOSException
from ._redact import redact_url as redact_url  # re-exported: the name's old home
from ._serialization import PickleSerializer, Serializer
from .core import validate

APP_NAME_PATTERN = re.compile(r"[a-z0-9_-]{3,256}")  # matched whole (fullmatch)
SYSTEM_DATABASE_URL_ENV = "DBOS_SYSTEM_DATABASE_URL"
DATABASE_URL_ENV = "DBOS_DATABASE_URL"
APP_VERSION_ENV = "DBOS__APPVERSION"
EXECUTOR_ID_ENV = "DBOS__VMID"
APP_ID_ENV = "DBOS__APPID"
DEFAULT_EXECUTOR_ID = "local"

# --- checks, shared by Config and Client ------------------------------------------------
#
# Each raises DBOSConfigError naming ``where`` (e.g. "Config.schema", "Client schema") and
# the rule, before anything connects.


def _fail(where: str, problem: str) -> DBOSConfigError:
    return DBOSConfigError(f"{where}: {problem}")


def require_optional_text(value: Any, where: str) -> None:
    """None, or a string that is not blank and that the system database can store as it
    is (no NUL, no lone surrogate, at most 600 bytes: see dbos_trio.core.validate)."""
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, f"{value!r} must be a non-empty string or None")
    try:
        validate.text(value, "it")
    except DBOSException as broken:
        raise _fail(where, f"{value[:40]!r}...: {broken.message}") from None


def require_database_url(value: Any, where: str) -> None:
    """None, or a ``postgresql://`` / ``sqlite:`` URL (shown redacted if it is wrong)."""
    if value is None:
        return
    if isinstance(value, str) and value.strip():
        try:
            validate.text(value, "it")
        except DBOSException as broken:
            # Not require_optional_text: its message shows the value itself.
            raise _fail(where, f"{redact_url(value)[:40]!r}...: {broken.message}") from None
    else:
        require_optional_text(value, where)
    if not value.startswith(("postgresql://", "postgres://", "sqlite:")):
        raise _fail(where, f"{redact_url(value)!r} must be a postgresql:// or sqlite:/// URL")


def require_schema(value: Any, where: str) -> None:
    """A PostgreSQL identifier: 1-63 bytes in UTF-8, no NUL.

    PostgreSQL silently truncates identifiers to 63 *bytes*: a longer name would address a
    different schema than the one configured.
    """
    if (
        not isinstance(value, str)
        or not value
        or len(value.encode("utf-8")) > 63
        or "\x00" in value
    ):
        raise _fail(where, f"{value!r} must be a PostgreSQL identifier (1-63 bytes in UTF-8)")


def require_positive_int(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(where, f"{value!r} must be a positive integer")


def require_positive_seconds(value: Any, where: str) -> None:
    # Finite too: an infinite timeout would never fire (and cannot arm a timer).
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise _fail(where, f"{value!r} must be a positive, finite number of seconds")


def require_optional_seconds(value: Any, where: str) -> None:
    """None, or a positive, finite number of seconds."""
    if value is not None:
        require_positive_seconds(value, where)


def require_bool(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise _fail(where, f"{value!r} must be True or False")


def _field_check(check: Any) -> Any:
    """``check`` as an attrs validator of a Config field."""

    def validate(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        check(value, f"Config.{attribute.name}")

    return validate


def _check_app_name(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not APP_NAME_PATTERN.fullmatch(value):
        raise _fail(
            f"Config.{attribute.name}",
            f"{value!r} must be 3 to 256 characters of lowercase letters, digits, '_' or '-'",
        )


def _to_queue_names(value: Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise _fail(
            "Config.listen_queues", f"{value!r} must be a sequence of queue names, not a string"
        )
    names = tuple(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise _fail("Config.listen_queues", f"{name!r} is not a queue name")
        try:
            validate.text(name, "a queue name")
        except DBOSException as broken:
            raise _fail("Config.listen_queues", broken.message) from None
    return names


def _check_serializer(_: Any, attribute: attrs.Attribute[Serializer], value: Serializer) -> None:
    if not all(hasattr(value, m) for m in ("serialize", "deserialize", "name")):
        raise _fail(
            f"Config.{attribute.name}", f"{value!r} must implement serialize, deserialize and name"
        )


def _check_unordered_tasks(_: Any, attribute: attrs.Attribute[str], value: Any) -> None:
    if value not in ("error", "warn"):
        raise _fail(f"Config.{attribute.name}", f"{value!r} must be 'error' or 'warn'")


@attrs.frozen(kw_only=True)
class Config:
    """How a :class:`~dbos_trio.DBOS` instance connects and identifies itself."""

    app_name: str = attrs.field(validator=_check_app_name)
    database_url: str | None = attrs.field(
        default=None, validator=_field_check(require_database_url), repr=redact_url
    )
    schema: str = attrs.field(default="dbos", validator=_field_check(require_schema))
    app_version: str | None = attrs.field(
        default=None, validator=_field_check(require_optional_text)
    )
    executor_id: str | None = attrs.field(
        default=None, validator=_field_check(require_optional_text)
    )
    max_connections: int = attrs.field(default=10, validator=_field_check(require_positive_int))
    use_listen_notify: bool = attrs.field(default=True, validator=_field_check(require_bool))
    run_migrations: bool = attrs.field(default=True, validator=_field_check(require_bool))
    listen_queues: tuple[str, ...] | None = attrs.field(default=None, converter=_to_queue_names)
    serializer: Serializer = attrs.field(factory=PickleSerializer, validator=_check_serializer)
    outcome_poll_interval: float = attrs.field(
        default=1.0, validator=_field_check(require_positive_seconds)
    )
    connect_timeout: float = attrs.field(
        default=10.0, validator=_field_check(require_positive_seconds)
    )
    notification_coalesce: float = attrs.field(
        default=0.01, validator=_field_check(require_positive_seconds)
    )
    direct_database_url: str | None = attrs.field(
        default=None, validator=_field_check(require_database_url), repr=redact_url
    )
    """A PostgreSQL URL that reaches the server directly, for what needs a session of its
    own: migrations (a session advisory lock) and LISTEN. Set it when ``database_url`` goes
    through PgBouncer in transaction-pooling mode; None (the default) uses ``database_url``."""
    prepared_statements: bool = attrs.field(default=True, validator=_field_check(require_bool))
    """Server-side prepared statements for the hot statements (the default). Turn them off
    behind PgBouncer in transaction-pooling mode before 1.21, which does not support them."""
    group_commit: bool = attrs.field(default=True, validator=_field_check(require_bool))
    """Coalesce step checkpoints of concurrent workflows in this process into shared
    commits (the default): each is still durable before its workflow goes on, fenced per
    row, and one's failure affects no other. The batch is whatever waited while the
    previous commit ran, so a lone workflow writes alone, as with False."""
    allow_pickle: bool = attrs.field(default=True, validator=_field_check(require_bool))
    """Whether this process reads ``py_pickle`` payloads (the default). Unpickling runs
    code of whoever wrote the payload, so anyone who can write the system database can run
    code in an executor that reads pickles. False is portable-only mode: pickled payloads
    are refused with :class:`~dbos_trio.DBOSPayloadError` (and the serializer must then not
    write them either: use :class:`~dbos_trio.PortableJSONSerializer`)."""
    database_retry_limit: float | None = attrs.field(
        default=None, validator=_field_check(require_optional_seconds)
    )
    """How long one system-database call keeps retrying a transient failure (connection
    lost, server restarting, a lock conflict) before it raises; None, the default, retries
    for as long as the executor lives, like the official SDK. A workflow whose call gave up
    stays PENDING and is run again by the executor's sweep once the database is back."""
    scheduler_polling_interval_sec: float = attrs.field(
        default=30.0, validator=_field_check(require_positive_seconds)
    )
    """How often the scheduler re-reads the schedules table (every second during the first
    minute after launch): a schedule created, paused, resumed, changed or deleted by another
    process takes effect within this long. Changes made through this executor take effect
    at once."""

    unordered_tasks: str = attrs.field(default="error", validator=_check_unordered_tasks)
    """What a durable call made from a plain Trio task inside a workflow does — a task of
    ``trio.open_nursery()`` rather than ``dbos.open_nursery()``, whose step id would
    depend on how Trio happens to schedule it: ``"error"`` (the default) raises
    :class:`~dbos_trio.DBOSUnorderedTaskError` naming the call; ``"warn"`` logs a warning
    once per workflow execution and takes the next id, as the official SDK does."""

    def __attrs_post_init__(self) -> None:
        if not self.allow_pickle and self.serializer.name() == "py_pickle":
            raise _fail(
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
