"""``EnqueueOptions``: what a client enqueues, where and how — checked when constructed.

The fields of ``dbos`` 3.4's ``EnqueueOptions``; a bad value raises
:class:`~dbos_trio.DBOSException` here, before anything connects or is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core import validate
from dbos_trio._serialization import PICKLE, PORTABLE_JSON, Codec
from dbos_trio.errors import DBOSArgumentTypeError, DBOSInvalidArgumentError

# Priorities as dbos 3.4 bounds them (0, the default, means "no priority").
MIN_PRIORITY = 1
MAX_PRIORITY = 2**31 - 1

DuplicationPolicy = Literal["reject", "return-existing"]
SerializationChoice = Literal["portable", "native"]


def _optional_text(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, str) and value and not value.strip():
        raise DBOSInvalidArgumentError(f"EnqueueOptions.{attribute.name} must not be blank")
    validate.optional_text(value, f"EnqueueOptions.{attribute.name}")


def _workflow_id(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (value == "" or (isinstance(value, str) and not value.strip())):
        raise DBOSInvalidArgumentError(  # dbos 3.4's words
            f"Invalid workflow ID {value!r}: workflow IDs must be non-empty and cannot be "
            "only whitespace. (EnqueueOptions.workflow_id)"
        )
    _optional_text(_, attribute, value)


def _name_text(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    _optional_text(_, attribute, value)
    validate.optional_text(
        value, f"EnqueueOptions.{attribute.name}", max_chars=validate.MAX_NAME_CHARS
    )


def _required_text(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, str) and value and not value.strip():
        raise DBOSInvalidArgumentError(f"EnqueueOptions.{attribute.name} must not be blank")
    validate.text(value, f"EnqueueOptions.{attribute.name}")


def _optional_seconds(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    validate.optional_seconds(value, f"EnqueueOptions.{attribute.name}")


def _roles(value: Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise DBOSArgumentTypeError(
            "EnqueueOptions.authenticated_roles must be a list of role names"
        )
    return tuple(validate.texts(value, "EnqueueOptions.authenticated_roles"))


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
    workflow_id: str | None = attrs.field(default=None, validator=_workflow_id)
    app_version: str | None = attrs.field(default=None, validator=_optional_text)
    workflow_timeout: float | None = attrs.field(default=None, validator=_optional_seconds)
    delay_seconds: float | None = attrs.field(default=None, validator=_optional_seconds)
    deduplication_id: str | None = attrs.field(default=None, validator=_optional_text)
    duplication_policy: DuplicationPolicy | None = None
    priority: int | None = None
    queue_partition_key: str | None = attrs.field(default=None, validator=_optional_text)
    class_name: str | None = attrs.field(default=None, validator=_name_text)
    instance_name: str | None = attrs.field(default=None, validator=_name_text)
    serialization: SerializationChoice | None = None
    application_name: str | None = attrs.field(default=None, validator=_optional_text)
    authenticated_user: str | None = attrs.field(default=None, validator=_optional_text)
    authenticated_roles: tuple[str, ...] | None = attrs.field(default=None, converter=_roles)
    # Stored in workflow_status.attributes (see SetWorkflowAttributes).
    # (left out of the hash: a dict is not hashable, and options stay usable as keys)
    attributes: dict[str, Any] | None = attrs.field(default=None, hash=False)
    # "reject": an existing workflow_id raises DBOSWorkflowIDInUseError instead of
    # returning that workflow's handle.
    workflow_id_reuse_policy: DuplicationPolicy | None = None

    def __attrs_post_init__(self) -> None:
        if self.duplication_policy not in (None, "reject", "return-existing"):
            raise DBOSInvalidArgumentError(
                f"Invalid duplication_policy {self.duplication_policy}. "
                "Must be either 'reject' or 'return-existing'."
            )
        if self.duplication_policy == "return-existing" and self.deduplication_id is None:
            raise DBOSInvalidArgumentError(
                "duplication_policy 'return-existing' requires a deduplication_id."
            )
        if self.priority is not None and (
            isinstance(self.priority, bool) or not isinstance(self.priority, int)
        ):
            raise DBOSArgumentTypeError(
                f"Invalid priority {self.priority!r}. Priority must be an int between "
                f"{MIN_PRIORITY}~{MAX_PRIORITY}."
            )
        if self.priority is not None and not MIN_PRIORITY <= self.priority <= MAX_PRIORITY:
            raise DBOSInvalidArgumentError(
                f"Invalid priority {self.priority}. "
                f"Priority must be between {MIN_PRIORITY}~{MAX_PRIORITY}."
            )
        if self.serialization not in (None, "portable", "native"):
            raise DBOSInvalidArgumentError(
                f"serialization must be 'portable', 'native' or None, not {self.serialization!r}"
            )
        attributes_rules.workflow_attributes(self.attributes, "EnqueueOptions.attributes")
        if self.workflow_id_reuse_policy not in (None, "reject", "return-existing"):
            raise DBOSInvalidArgumentError(
                f"Invalid workflow_id_reuse_policy {self.workflow_id_reuse_policy}. "
                "Must be either 'return-existing' or 'reject'."
            )
        if self.workflow_timeout is not None and self.workflow_timeout <= 0:
            raise DBOSInvalidArgumentError(
                f"EnqueueOptions.workflow_timeout: {self.workflow_timeout!r} must be > 0"
            )


def payload_format(codec: Codec, serialization: SerializationChoice | None) -> str:
    if serialization == "portable":
        return PORTABLE_JSON
    if serialization == "native":
        return PICKLE
    if serialization is not None:
        raise DBOSInvalidArgumentError(
            f"serialization must be 'portable', 'native' or None, not {serialization!r}"
        )
    return codec.default_format
