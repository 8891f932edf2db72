"""The checks of configuration values, shared by :class:`~dbos_trio.Config` and
:class:`~dbos_trio.Client`: each takes a value and where it was given, and raises.

Invariant: every check raises :class:`~dbos_trio.DBOSConfigError` naming ``where``
(``"Config.schema"``, ``"Client schema"``) and the rule, and nothing else — it reads no
environment, opens nothing and connects nowhere — so a bad value is refused at
``Config(...)`` or ``Client(...)``, before anything connects, and a URL is only ever shown
redacted (:func:`~dbos_trio._redact.redact_url`). Kept apart from :mod:`dbos_trio._config`,
whose concern is the fields themselves and what they default to.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import attrs

from dbos_trio._core import validate
from dbos_trio._core.retention import RetentionPolicy
from dbos_trio._redact import redact_url
from dbos_trio.errors import DBOSConfigError, DBOSException

APP_NAME_PATTERN = re.compile(r"[a-z0-9_-]{3,256}")  # matched whole (fullmatch)


def config_error(where: str, problem: str) -> DBOSConfigError:
    return DBOSConfigError(f"{where}: {problem}")


def require_optional_text(value: Any, where: str) -> None:
    """None, or a string that is not blank and that the system database can store as it
    is (no NUL, no lone surrogate, at most 600 bytes: see dbos_trio._core.validate)."""
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise config_error(where, f"{value!r} must be a non-empty string or None")
    try:
        validate.text(value, "it")
    except DBOSException as broken:
        raise config_error(where, f"{value[:40]!r}...: {broken.message}") from None


def require_database_url(value: Any, where: str) -> None:
    """None, or a ``postgresql://`` / ``sqlite:`` URL (shown redacted if it is wrong)."""
    if value is None:
        return
    if isinstance(value, str) and value.strip():
        try:
            validate.text(value, "it")
        except DBOSException as broken:
            # Not require_optional_text: its message shows the value itself.
            raise config_error(where, f"{redact_url(value)[:40]!r}...: {broken.message}") from None
    else:
        require_optional_text(value, where)
    if not value.startswith(("postgresql://", "postgres://", "sqlite:")):
        raise config_error(
            where, f"{redact_url(value)!r} must be a postgresql:// or sqlite:/// URL"
        )


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
        raise config_error(
            where, f"{value!r} must be a PostgreSQL identifier (1-63 bytes in UTF-8)"
        )


def require_positive_int(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise config_error(where, f"{value!r} must be a positive integer")


# The smallest Config.max_value_bytes: an error over the limit is stored shortened to a
# couple of kilobytes, which must still fit.
MIN_MAX_VALUE_BYTES = 8 * 1024


def require_value_limit(value: Any, where: str) -> None:
    """None (no limit), or a number of bytes of at least :data:`MIN_MAX_VALUE_BYTES`."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_MAX_VALUE_BYTES:
        raise config_error(
            where, f"{value!r} must be None or a number of bytes of at least {MIN_MAX_VALUE_BYTES}"
        )


def require_positive_seconds(value: Any, where: str) -> None:
    # Finite too: an infinite timeout would never fire (and cannot arm a timer).
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise config_error(where, f"{value!r} must be a positive, finite number of seconds")


def require_optional_seconds(value: Any, where: str) -> None:
    """None, or a positive, finite number of seconds."""
    if value is not None:
        require_positive_seconds(value, where)


def require_bool(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise config_error(where, f"{value!r} must be True or False")


def field_check(check: Any) -> Any:
    """``check`` as an attrs validator of a Config field."""

    def validate(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        check(value, f"Config.{attribute.name}")

    return validate


def check_app_name(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not APP_NAME_PATTERN.fullmatch(value):
        raise config_error(
            f"Config.{attribute.name}",
            f"{value!r} must be 3 to 256 characters of lowercase letters, digits, '_' or '-'",
        )


def queue_names(value: Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise config_error(
            "Config.listen_queues", f"{value!r} must be a sequence of queue names, not a string"
        )
    names = tuple(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise config_error("Config.listen_queues", f"{name!r} is not a queue name")
        try:
            validate.text(name, "a queue name")
        except DBOSException as broken:
            raise config_error("Config.listen_queues", broken.message) from None
    return names


def check_serializer(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not all(hasattr(value, m) for m in ("serialize", "deserialize", "name")):
        raise config_error(
            f"Config.{attribute.name}", f"{value!r} must implement serialize, deserialize and name"
        )


def check_unordered_tasks(_: Any, attribute: attrs.Attribute[str], value: Any) -> None:
    if value not in ("error", "warn"):
        raise config_error(f"Config.{attribute.name}", f"{value!r} must be 'error' or 'warn'")


# Seconds between an executor's stamps of the rows it runs (see Config.heartbeat_interval).
DEFAULT_HEARTBEAT_INTERVAL = 10.0
# Seconds of silence before another executor's work is adopted, unless the heartbeat
# interval makes six intervals longer (see Config.adopt_dead_executors_after).
DEFAULT_ADOPTION_SECONDS = 60.0


def check_sync_commit(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    levels = ("on", "off", "local", "remote_write", "remote_apply")
    if value is not None and value not in levels:
        raise config_error(f"Config.{attribute.name}", f"{value!r} must be None or one of {levels}")


def check_otel_format(_: Any, attribute: attrs.Attribute[str], value: Any) -> None:
    if value not in ("legacy", "semconv"):
        raise config_error(f"Config.{attribute.name}", f"{value!r} must be 'legacy' or 'semconv'")


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def check_log_level(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and value not in LOG_LEVELS:
        raise config_error(
            f"Config.{attribute.name}", f"{value!r} must be one of {', '.join(LOG_LEVELS)} or None"
        )


def check_retention(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, RetentionPolicy):
        raise config_error(
            f"Config.{attribute.name}", f"{value!r} must be a dbos_trio.RetentionPolicy or None"
        )
