"""What workflows and steps this process knows, frozen while an executor runs.

Invariants, and why:

* The registry is frozen at launch and thawed at shutdown. A stored row names a workflow
  by its registered name; if registrations could change while the executor dequeues, the
  same row could mean different code from one moment to the next.
* A registered function never holds its :class:`~dbos_trio.DBOS` instance strongly (only
  a weak reference), so a module-level decorated function does not keep an instance, its
  registry and its executor alive forever.
* Configured instances (``DBOSConfiguredInstance``) are found by (class name, config name)
  when a stored row is dispatched; they are held weakly too, so creating one does not leak.
"""

from __future__ import annotations

import inspect
import logging
import sys
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Literal, Protocol

import attrs

from dbos_trio._core import validate
from dbos_trio.errors import DBOSException

logger = logging.getLogger("dbos_trio.registry")

WorkflowKind = Literal["function", "static", "class", "instance"]

# The attribute a registered workflow's wrapper carries, pointing at its registration.
WORKFLOW_ATTRIBUTE = "__dbos_workflow__"


@attrs.define(eq=False)
class RegisteredWorkflow:
    """A workflow function and how it was registered."""

    name: str
    func: Callable[..., Awaitable[Any]]
    max_recovery_attempts: int | None
    portable: bool  # serialization="portable": rows written as portable_json
    # serialization="native": rows written as py_pickle even with a custom serializer.
    native: bool = False
    # Resolved from how the function is reached: a plain function, or a member of a class
    # (static method, class method, or instance method on a DBOSConfiguredInstance).
    kind: WorkflowKind | None = None
    owner: type | None = None

    @property
    def class_name(self) -> str | None:
        """The stored ``class_name``: the defining class, for class and instance methods."""
        if self.kind in ("class", "instance"):
            return _class_part(self.func.__qualname__)
        return None

    def resolve_owner(self) -> type | None:
        """The class object a class-method workflow is bound to, for dispatch from a row."""
        if self.owner is not None:
            return self.owner
        owner = _class_by_qualname(self.func.__module__, _class_part(self.func.__qualname__))
        self.owner = owner
        return owner


def _class_part(qualname: str) -> str:
    return qualname.rsplit(".", 1)[0] if "." in qualname else qualname


def _class_by_qualname(module_name: str, qualname: str) -> type | None:
    target: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        if part == "<locals>" or target is None:
            return None
        target = getattr(target, part, None)
    return target if isinstance(target, type) else None


def member_kind(registered: RegisteredWorkflow, args: tuple[Any, ...]) -> WorkflowKind:
    """How a call reached ``registered``: decided from the call's first argument.

    A bound instance method passes the instance first; a class method passes the class;
    a static method or a plain function passes neither.
    """
    if registered.kind is not None:
        return registered.kind
    qualname = registered.func.__qualname__
    if "." not in qualname or qualname.endswith(">") or not args:
        return "function"
    class_qualname = _class_part(qualname)
    first = args[0]
    if isinstance(first, DBOSConfiguredInstance) and any(
        c.__qualname__ == class_qualname for c in type(first).__mro__
    ):
        return "instance"
    if isinstance(first, type) and any(c.__qualname__ == class_qualname for c in first.__mro__):
        registered.owner = registered.owner or next(
            c for c in first.__mro__ if c.__qualname__ == class_qualname
        )
        return "class"
    return "static"


@attrs.frozen(kw_only=True)
class DeclaredSchedule:
    """A schedule declared with ``@dbos.scheduled``, applied (upserted) at every launch."""

    schedule_name: str
    workflow_name: str
    class_name: str | None
    schedule: str
    context: Any
    automatic_backfill: bool
    cron_timezone: str | None
    queue_name: str | None


class LaunchResource(Protocol):
    """Something opened at every launch and closed at its shutdown (a datasource)."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...


class Registry:
    """Registered workflows by name; frozen while an executor runs."""

    def __init__(self) -> None:
        self._workflows: dict[str, RegisteredWorkflow] = {}
        self._frozen = False
        self.schedules: dict[str, DeclaredSchedule] = {}
        # Opened at launch after the system database, closed at shutdown before it.
        self.resources: list[LaunchResource] = []
        # Called after a workflow's failure is recorded (engine/observability/failures.py).
        self.failure_hooks: list[Callable[[Any], Awaitable[None]]] = []

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        self._frozen = True

    def thaw(self) -> None:
        self._frozen = False

    def _check_open(self, what: str) -> None:
        if self._frozen:
            raise DBOSException(
                f"cannot register {what} while DBOS is launched: register before launch"
            )

    def add_workflow(self, registered: RegisteredWorkflow) -> None:
        self._check_open(f"workflow {registered.name!r}")
        existing = self._workflows.get(registered.name)
        if existing is not None and existing.func.__module__ != registered.func.__module__:
            raise DBOSException(
                f"workflow name {registered.name!r} is registered twice, by "
                f"{existing.func.__module__} and {registered.func.__module__}"
            )
        if existing is not None and existing.func is not registered.func:
            # dbos 3.4 warns too: the later definition replaces the earlier one, which is
            # usually a copy-paste slip the user wants to hear about.
            logger.warning(
                "Duplicate registration of function '%s': the later definition is used",
                registered.name,
            )
        self._workflows[registered.name] = registered

    def add_schedule(self, declared: DeclaredSchedule) -> None:
        self._check_open(f"schedule {declared.schedule_name!r}")
        if declared.schedule_name in self.schedules:
            raise DBOSException(f"schedule {declared.schedule_name!r} is declared twice")
        self.schedules[declared.schedule_name] = declared

    def check_registration_allowed(self, what: str) -> None:
        self._check_open(what)

    def add_resource(self, resource: LaunchResource, what: str) -> None:
        self._check_open(what)
        self.resources.append(resource)

    def add_failure_hook(self, hook: Callable[[Any], Awaitable[None]]) -> None:
        self._check_open(f"failure hook {getattr(hook, '__qualname__', hook)!r}")
        self.failure_hooks.append(hook)

    def find(self, name: str) -> RegisteredWorkflow | None:
        return self._workflows.get(name)

    def all(self) -> list[RegisteredWorkflow]:
        return list(self._workflows.values())


class DBOSConfiguredInstance:
    """Base of classes whose instance methods are workflows.

    ``config_name`` tells instances of one class apart: it is stored with every workflow
    the instance starts, and recovery finds the instance again by (class, config name).
    """

    _instances: ClassVar[weakref.WeakValueDictionary[tuple[str, str], DBOSConfiguredInstance]] = (
        weakref.WeakValueDictionary()
    )

    def __init__(self, config_name: str) -> None:
        validate.text(config_name, "config_name", max_chars=validate.MAX_NAME_CHARS)
        self.config_name = config_name
        for cls in type(self).__mro__:
            if cls is DBOSConfiguredInstance or cls is object:
                continue
            key = (cls.__qualname__, config_name)
            existing = self._instances.get(key)
            if existing is not None and existing is not self:
                raise DBOSException(
                    f"an instance of {cls.__qualname__} with config name {config_name!r} "
                    "already exists"
                )
            self._instances[key] = self

    @classmethod
    def find_instance(cls, class_name: str, config_name: str) -> DBOSConfiguredInstance | None:
        """The live instance of ``class_name`` registered as ``config_name``, or None
        (recovery looks a workflow's instance up here by the names stored on its row)."""
        return cls._instances.get((class_name, config_name))


def resolve_workflow(
    fn: Callable[..., Any], args: tuple[Any, ...]
) -> tuple[RegisteredWorkflow, tuple[Any, ...]]:
    """The registered workflow ``fn`` refers to, and the arguments including any bound self."""
    target = fn
    bound: tuple[Any, ...] = ()
    if inspect.ismethod(fn):
        target = fn.__func__
        bound = (fn.__self__,)
    registered = getattr(target, WORKFLOW_ATTRIBUTE, None)
    if not isinstance(registered, RegisteredWorkflow):
        name = getattr(fn, "__qualname__", repr(fn))
        raise DBOSException(
            f"{name} is not a registered workflow: decorate it with @dbos.workflow()"
        )
    return registered, bound + tuple(args)
