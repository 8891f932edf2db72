"""The shared workflow operations (``dbos_trio._ops``): one set of rules for every face.

Pure checks, no database: an operation validates every argument and asks for its runtime
*at the call*, before anything is awaited, so a bad value fails before any database is
reached (here, a :class:`Reach` whose ``runtime()`` raises); and ``DBOS`` and ``Client``
expose the same signatures for the operations they share.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest

from dbos_trio import DBOS
from dbos_trio._client import Client
from dbos_trio._ops import inspect as reads
from dbos_trio._ops import manage, retention
from dbos_trio._ops.reach import unrecorded
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException, DBOSInvalidArgumentError

T = TypeVar("T")


class Unreachable(Exception):
    """What the reach below raises when an operation asks it for a runtime."""


class NoDatabase:
    """A reach to no database: asking it for a runtime raises :class:`Unreachable`."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def runtime(self, operation: str) -> Any:
        self.asked.append(operation)
        raise Unreachable(operation)

    def checkpoint(
        self, step_name: str, operation: Callable[[], Awaitable[T]]
    ) -> Coroutine[Any, Any, T]:
        return unrecorded(step_name, operation)


# Each operation called with one bad argument (everything else valid).
BAD_CALLS: dict[str, Callable[[Any], object]] = {
    "get_workflow_status": lambda r: reads.get_workflow_status(r, ""),
    "retrieve_workflow": lambda r: reads.retrieve_workflow(r, 7),
    "list_workflow_steps": lambda r: reads.list_workflow_steps(r, "wf", limit=-1),
    "list_workflows": lambda r: reads.list_workflows(r, {"status": "BOGUS"}),
    "list_workflows (unknown filter)": lambda r: reads.list_workflows(r, {"colour": "red"}),
    "list_queued_workflows": lambda r: reads.list_queued_workflows(r, {"limit": "ten"}),
    "cancel_workflow": lambda r: manage.cancel_workflow(r, ""),
    "cancel_workflows": lambda r: manage.cancel_workflows(r, "one-id-not-a-list"),
    "resume_workflow": lambda r: manage.resume_workflow(r, "wf", queue_name=""),
    "resume_workflows": lambda r: manage.resume_workflows(r, ["wf", None]),  # type: ignore[list-item]
    "fork_workflow": lambda r: manage.fork_workflow(r, "wf", -1),
    "fork_workflow (children)": lambda r: manage.fork_workflow(
        r,
        "wf",
        1,
        replacement_children=["not", "a", "dict"],  # type: ignore[arg-type]
    ),
    "retry_workflow": lambda r: manage.retry_workflow(r, "wf", application_version=""),
    "pause_workflow": lambda r: manage.pause_workflow(r, ""),
    "unpause_workflow": lambda r: manage.unpause_workflow(r, 7),  # type: ignore[arg-type]
    "rewind_workflow": lambda r: manage.rewind_workflow(r, "wf", start_step=True),
    "delete_workflow": lambda r: manage.delete_workflow(r, "wf", delete_children=1),  # type: ignore[arg-type]
    "delete_workflows": lambda r: manage.delete_workflows(r, [""]),
    "set_workflow_delay": lambda r: manage.set_workflow_delay(r, "wf", delay_seconds=-1),
    "set_workflow_delay (both)": lambda r: manage.set_workflow_delay(
        r, "wf", delay_seconds=1, delay_until_epoch_ms=5
    ),
    "set_workflow_delay (neither)": lambda r: manage.set_workflow_delay(r, "wf"),
    "update_workflow_attributes": lambda r: manage.update_workflow_attributes(
        r, "wf", {"k": object()}
    ),
    "update_workflow_attributes (merge None)": lambda r: manage.update_workflow_attributes(
        r, "wf", None, merge=True
    ),
    "garbage_collect": lambda r: retention.garbage_collect(r, completed_before="yesterday"),
    "garbage_collect (batch)": lambda r: retention.garbage_collect(r, batch_size=0),
    "cancel_workflows_created_before": lambda r: retention.cancel_workflows_created_before(r, -5),
    "collect_payloads": lambda r: retention.collect_payloads(r, grace_seconds=-1),
}

# Each operation called with valid arguments.
GOOD_CALLS: dict[str, Callable[[Any], object]] = {
    "get_workflow_status": lambda r: reads.get_workflow_status(r, "wf"),
    "retrieve_workflow": lambda r: reads.retrieve_workflow(r, "wf"),
    "list_workflow_steps": lambda r: reads.list_workflow_steps(r, "wf"),
    "list_workflows": lambda r: reads.list_workflows(r, {"status": "PENDING"}),
    "list_queued_workflows": lambda r: reads.list_queued_workflows(r, {}),
    "cancel_workflow": lambda r: manage.cancel_workflow(r, "wf"),
    "cancel_workflows": lambda r: manage.cancel_workflows(r, ["wf"]),
    "resume_workflow": lambda r: manage.resume_workflow(r, "wf"),
    "resume_workflows": lambda r: manage.resume_workflows(r, ["wf"]),
    "fork_workflow": lambda r: manage.fork_workflow(r, "wf", 1),
    "retry_workflow": lambda r: manage.retry_workflow(r, "wf"),
    "pause_workflow": lambda r: manage.pause_workflow(r, "wf"),
    "unpause_workflow": lambda r: manage.unpause_workflow(r, "wf"),
    "rewind_workflow": lambda r: manage.rewind_workflow(r, "wf"),
    "delete_workflow": lambda r: manage.delete_workflow(r, "wf"),
    "delete_workflows": lambda r: manage.delete_workflows(r, ["wf"]),
    "set_workflow_delay": lambda r: manage.set_workflow_delay(r, "wf", delay_seconds=1),
    "update_workflow_attributes": lambda r: manage.update_workflow_attributes(r, "wf", None),
    "garbage_collect": lambda r: retention.garbage_collect(r, keep_newest=10),
    "cancel_workflows_created_before": lambda r: retention.cancel_workflows_created_before(
        r, "2026-01-01T00:00:00Z"
    ),
    "collect_payloads": lambda r: retention.collect_payloads(r),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_a_bad_argument_raises_at_the_call_before_any_database_is_reached(name: str) -> None:
    reach = NoDatabase()
    with pytest.raises((DBOSInvalidArgumentError, DBOSArgumentTypeError, DBOSException)) as raised:
        BAD_CALLS[name](reach)
    assert not isinstance(raised.value, Unreachable)
    assert reach.asked == [], f"{name} asked for a runtime before refusing its arguments"


@pytest.mark.parametrize("name", sorted(GOOD_CALLS))
def test_an_operation_asks_for_its_runtime_at_the_call_not_when_awaited(name: str) -> None:
    reach = NoDatabase()
    # No coroutine is made (so none is left unawaited): the call itself reaches for the
    # runtime, which is how a closed face fails before the caller awaits anything.
    with pytest.raises(Unreachable):
        GOOD_CALLS[name](reach)
    assert len(reach.asked) == 1


def test_every_operation_is_covered_by_the_checks_above() -> None:
    public = {
        name
        for module in (reads, manage, retention)
        for name, value in vars(module).items()
        if inspect.isfunction(value)
        and value.__module__ == module.__name__
        and not name.startswith("_")
        and name != "scoped"  # a helper of the listings, not an operation
    }
    assert public == set(GOOD_CALLS)
    assert public <= {name.split(" ")[0] for name in BAD_CALLS}


# The operations both faces expose, by their public name: all of them.
# Not collect_payloads: the CLI's gc and the retention task run it, no face has a method.
SHARED = sorted(set(GOOD_CALLS) - {"collect_payloads"})
# Where the faces differ on purpose: DBOS.set_workflow_delay keeps its 0.x signature
# (delay_seconds only, required), the client takes the official client's either-or.
DIFFERENT = {"set_workflow_delay"}


def _parameters(method: Callable[..., Any]) -> list[tuple[str, Any, Any, Any]]:
    signature = inspect.signature(method)
    return [
        (p.name, p.kind, p.default, p.annotation)
        for p in signature.parameters.values()
        if p.name != "self"
    ]


@pytest.mark.parametrize("name", [name for name in SHARED if name not in DIFFERENT])
def test_dbos_and_client_take_the_same_arguments_for_a_shared_operation(name: str) -> None:
    on_dbos, on_client = getattr(DBOS, name), getattr(Client, name)
    assert _parameters(on_dbos) == _parameters(on_client)
    assert on_dbos.__doc__ and on_client.__doc__


def test_the_operation_takes_every_argument_either_face_does() -> None:
    for name in SHARED:
        operation = getattr(reads, name, None) or getattr(manage, name, None)
        if operation is None:
            operation = getattr(retention, name)
        taken = set(inspect.signature(operation).parameters)
        for face in (DBOS, Client):
            given = {p for p in inspect.signature(getattr(face, name)).parameters if p != "self"}
            assert given <= taken, f"{face.__name__}.{name} takes {given - taken} it cannot pass"


def test_the_client_deletes_in_bulk_like_dbos() -> None:
    assert _parameters(Client.delete_workflows) == _parameters(DBOS.delete_workflows)
    assert inspect.iscoroutinefunction(Client.delete_workflows)
