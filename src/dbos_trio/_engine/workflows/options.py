"""The caller's options for the next start: ``SetWorkflowID``, ``SetWorkflowTimeout``,
``SetEnqueueOptions``, ``SetWorkflowAttributes``.

Plain ``with`` blocks over contextvars, so they follow Trio tasks the way users expect:
inherited by tasks spawned inside them, and cleared inside a workflow body
(:func:`options_cleared`) so they apply to one start, not to its children. Each checks
its values when it is built (``SetWorkflowID("")`` raises at once, as dbos 3.4's), before
anything is started.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any, Literal, Self

import attrs

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core import validate
from dbos_trio.errors import DBOSArgumentTypeError, DBOSInvalidArgumentError

logger = logging.getLogger("dbos_trio")

MAX_PRIORITY = 2_147_483_647


ReusePolicy = Literal["reject", "return-existing"]


@attrs.define(eq=False)
class _AssignedId:
    workflow_id: str
    used: bool = False
    reuse_policy: ReusePolicy | None = None


_assigned_id: contextvars.ContextVar[_AssignedId | None] = contextvars.ContextVar(
    "dbos_trio_assigned_id", default=None
)
# None: no timeout set here (inherit the parent's deadline); 0.0: explicitly none.
_timeout: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "dbos_trio_timeout", default=None
)


@attrs.frozen(kw_only=True)
class EnqueueOptions:
    """What ``SetEnqueueOptions`` sets for the next enqueue."""

    deduplication_id: str | None = None
    priority: int | None = None
    app_version: str | None = None
    queue_partition_key: str | None = None
    delay_seconds: float | None = None
    duplication_policy: Literal["reject", "return-existing"] | None = None

    def is_empty(self) -> bool:
        return self == EnqueueOptions()


_enqueue_options: contextvars.ContextVar[EnqueueOptions | None] = contextvars.ContextVar(
    "dbos_trio_enqueue_options", default=None
)
# JSON text of the attributes for workflows started in the block (None: none).
_attributes: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "dbos_trio_attributes", default=None
)


def check_reuse_policy(policy: Any, argument: str) -> ReusePolicy | None:
    if policy not in (None, "reject", "return-existing"):
        raise DBOSInvalidArgumentError(
            f"Invalid workflow_id_reuse_policy {policy!r}. "
            "Must be either 'return-existing' or 'reject'."
        )
    return policy  # type: ignore[no-any-return]


class _OptionBlock:
    """A ``with`` block setting one contextvar: its value is checked when the block is
    built (``SetWorkflowID("")`` raises there, as in dbos 3.4), set on entry, and put
    back on exit. Re-entrant: each entry keeps its own token."""

    _var: contextvars.ContextVar[Any]

    def __init__(self, value: Any) -> None:
        self._value = value
        self._tokens: list[contextvars.Token[Any]] = []

    def __enter__(self) -> Self:
        self._tokens.append(self._var.set(self._fresh()))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._var.reset(self._tokens.pop())

    def _fresh(self) -> Any:
        return self._value


class SetWorkflowID(_OptionBlock):
    """The first workflow started in this block takes ``workflow_id``.

    Checked when built: an empty or whitespace-only id raises
    :class:`~dbos_trio.DBOSInvalidArgumentError` ("Invalid workflow ID ...", as dbos
    3.4's), as does a NUL-bearing or too long one. With
    ``workflow_id_reuse_policy="reject"`` that start raises
    :class:`~dbos_trio.DBOSWorkflowIDInUseError` if a workflow with the id exists already
    (the default, ``"return-existing"``, joins it)."""

    _var = _assigned_id

    def __init__(
        self, workflow_id: str, *, workflow_id_reuse_policy: ReusePolicy | None = None
    ) -> None:
        if workflow_id is None or (isinstance(workflow_id, str) and not workflow_id.strip()):
            raise DBOSInvalidArgumentError(
                f"Invalid workflow ID {workflow_id!r}: workflow IDs must be non-empty and "
                "cannot be only whitespace. (SetWorkflowID: workflow_id)"
            )
        validate.text(workflow_id, "SetWorkflowID: workflow_id")
        self.workflow_id = workflow_id
        self.reuse_policy = check_reuse_policy(workflow_id_reuse_policy, "reuse_policy")
        super().__init__(workflow_id)

    def _fresh(self) -> _AssignedId:
        # A fresh record per entry: "the first workflow of this block takes the id".
        return _AssignedId(self.workflow_id, reuse_policy=self.reuse_policy)


class SetWorkflowAttributes(_OptionBlock):
    """Workflows started in this block store ``attributes`` (a dict of JSON values) in
    their row's ``attributes`` column, where ``list_workflows(attributes=...)`` finds
    them. Checked when built: anything but a dict of JSON values raises
    :class:`~dbos_trio.DBOSArgumentTypeError` ("Invalid workflow attributes ...", as
    dbos 3.4's); None clears attributes set by an enclosing block. Not inherited by the
    children those workflows start."""

    _var = _attributes

    def __init__(self, attributes: dict[str, Any] | None) -> None:
        encoded = attributes_rules.workflow_attributes(attributes, "SetWorkflowAttributes")
        self.attributes = attributes
        super().__init__(encoded)


@attrs.frozen
class StartExtras:
    """Options read at the call for one start, beside its id: the id's reuse policy and
    the ``SetWorkflowAttributes`` in force (JSON text)."""

    reuse_policy: ReusePolicy | None = None
    attributes: str | None = None


def start_extras(assigned: str | None) -> StartExtras:
    """The extras of a start that just took ``assigned`` (its ``SetWorkflowID`` id, or
    None); call it synchronously right after :func:`take_assigned_id`."""
    current = _assigned_id.get()
    policy = None
    if assigned is not None and current is not None and current.workflow_id == assigned:
        policy = current.reuse_policy
    return StartExtras(reuse_policy=policy, attributes=_attributes.get())


def take_assigned_id() -> str | None:
    """Consume the ``SetWorkflowID`` id, if one is set and still unused."""
    assigned = _assigned_id.get()
    if assigned is None:
        return None
    if assigned.used:
        logger.warning(
            "SetWorkflowID(%r) was taken by an earlier workflow started in the same block; "
            "this one gets a generated id",
            assigned.workflow_id,
        )
        return None
    assigned.used = True
    return assigned.workflow_id


class SetWorkflowTimeout(_OptionBlock):
    """Workflows started in this block time out after ``seconds`` (None: no timeout): a
    finite number of seconds, at most about 31 years (it is stored in milliseconds).
    Checked when built."""

    _var = _timeout

    def __init__(self, seconds: float | None) -> None:
        validate.optional_seconds(seconds, "SetWorkflowTimeout: seconds")
        super().__init__(0.0 if seconds is None else float(seconds))


def timeout_option() -> float | None:
    """The ``SetWorkflowTimeout`` in force: None if unset, 0.0 if explicitly no timeout."""
    return _timeout.get()


class SetEnqueueOptions(_OptionBlock):
    """Options for workflows enqueued in this block, checked when built (a bad one raises
    :class:`~dbos_trio.DBOSInvalidArgumentError` or
    :class:`~dbos_trio.DBOSArgumentTypeError`)."""

    _var = _enqueue_options

    def __init__(
        self,
        *,
        deduplication_id: str | None = None,
        priority: int | None = None,
        app_version: str | None = None,
        queue_partition_key: str | None = None,
        delay_seconds: float | None = None,
        duplication_policy: Literal["reject", "return-existing"] | None = None,
    ) -> None:
        validate.optional_text(deduplication_id, "deduplication_id")
        if priority is not None and (
            isinstance(priority, bool)
            or not isinstance(priority, int)
            or not 1 <= priority <= MAX_PRIORITY
        ):
            error = (
                DBOSInvalidArgumentError
                if isinstance(priority, int) and not isinstance(priority, bool)
                else DBOSArgumentTypeError
            )
            raise error(  # dbos 3.4's words
                f"Invalid priority {priority!r}. Priority must be between 1~{MAX_PRIORITY}."
            )
        validate.optional_text(app_version, "app_version")
        validate.optional_text(queue_partition_key, "queue_partition_key")
        validate.optional_seconds(delay_seconds, "delay_seconds")
        if duplication_policy not in (None, "reject", "return-existing"):
            raise DBOSInvalidArgumentError(  # dbos 3.4's words
                f"Invalid duplication_policy {duplication_policy}. "
                "Must be either 'reject' or 'return-existing'."
            )
        if deduplication_id is not None and queue_partition_key is not None:
            raise DBOSInvalidArgumentError(
                "deduplication is not supported together with a queue partition key"
            )
        super().__init__(
            EnqueueOptions(
                deduplication_id=deduplication_id,
                priority=priority,
                app_version=app_version,
                queue_partition_key=queue_partition_key,
                delay_seconds=delay_seconds,
                duplication_policy=duplication_policy,
            )
        )


def enqueue_options() -> EnqueueOptions:
    return _enqueue_options.get() or EnqueueOptions()


class options_cleared:  # named as the function it replaced: ``with options_cleared():``
    """Run a workflow body with the caller's start options out of sight.

    A slotted class holding the four tokens, not a generator context manager: it lives
    as long as the body, so its size is paid per running workflow."""

    __slots__ = ("_assigned", "_attributes", "_enqueue", "_timeout")

    def __enter__(self) -> None:
        self._assigned = _assigned_id.set(None)
        self._timeout = _timeout.set(None)
        self._enqueue = _enqueue_options.set(None)
        self._attributes = _attributes.set(None)

    def __exit__(self, *exc_info: object) -> None:
        _attributes.reset(self._attributes)
        _enqueue_options.reset(self._enqueue)
        _timeout.reset(self._timeout)
        _assigned_id.reset(self._assigned)
