"""``list_workflows`` filters, from the keyword arguments of ``dbos`` 3.4 to stored fields.

Pure logic: the keyword filters users pass (``status="PENDING"``, ``name=[...]``,
``start_time="2026-01-01T00:00:00Z"``, ...) become the fields of the backend's listing
record (:class:`~dbos_trio._sysdb.records.WorkflowFilters`): singular names as tuples,
times as epoch milliseconds. An unknown filter is an error, not silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core import validate
from dbos_trio._core.statuses import ALL_STATUSES
from dbos_trio.errors import DBOSArgumentTypeError, DBOSInvalidArgumentError

Many = str | Sequence[str] | None
When = str | datetime | int | None


class ListFilters(TypedDict, total=False):
    """The keyword filters of ``list_workflows`` and ``list_queued_workflows`` (on ``DBOS``
    and ``Client``), as ``dbos`` 3.4 names them; every one is optional.

    A filter left out or None does not narrow the listing. A ``str | Sequence[str]`` filter
    matches any of its values. Times take ISO 8601 strings, ``datetime`` objects or epoch
    milliseconds. ``limit``/``offset`` page the result; ``sort_desc`` (default False) lists
    newest first; ``load_input``/``load_output`` (default True) decode the payloads;
    ``attributes`` keeps the workflows whose attributes contain those keys and values.
    """

    workflow_ids: Sequence[str] | None
    status: Many
    name: Many
    app_version: Many
    forked_from: Many
    parent_workflow_id: Many
    user: Many
    queue_name: Many
    executor_id: Many
    schedule_name: Many
    application_name: Many
    workflow_id_prefix: str | Sequence[str] | None
    start_time: When
    end_time: When
    completed_after: When
    completed_before: When
    dequeued_after: When
    dequeued_before: When
    limit: int | None
    offset: int | None
    sort_desc: bool
    load_input: bool
    load_output: bool
    queues_only: bool
    was_forked_from: bool | None
    is_fork: bool | None
    has_parent: bool | None
    attributes: dict[str, Any] | None


LISTED_AS_QUEUED = ("DELAYED", "ENQUEUED", "PENDING")
"""What ``list_queued_workflows`` lists unless its ``status`` filter says otherwise."""


def queued(filters: Mapping[str, Any]) -> dict[str, Any]:
    """``list_queued_workflows``' filters as ``list_workflows`` filters: queued rows only,
    DELAYED, ENQUEUED or PENDING unless ``status`` is given."""
    return {
        **filters,
        "status": filters.get("status") or list(LISTED_AS_QUEUED),
        "queues_only": True,
    }


# A filter of one or many values, and the listing field it fills.
PLURAL_FILTERS = {
    "workflow_ids": "workflow_ids",
    "status": "statuses",
    "name": "names",
    "app_version": "app_versions",
    "queue_name": "queue_names",
    "executor_id": "executor_ids",
    "forked_from": "forked_from",
    "parent_workflow_id": "parent_workflow_ids",
    "user": "users",
    "application_name": "application_names",
    "schedule_name": "schedule_names",
}
# A time filter, and the epoch-milliseconds field it fills.
TIME_FILTERS = {
    "start_time": "created_after_ms",
    "end_time": "created_before_ms",
    "completed_after": "completed_after_ms",
    "completed_before": "completed_before_ms",
    "dequeued_after": "dequeued_after_ms",
    "dequeued_before": "dequeued_before_ms",
}
DIRECT_FILTERS = frozenset(
    {
        "workflow_id_prefix",
        "limit",
        "offset",
        "sort_desc",
        "load_input",
        "load_output",
        "queues_only",
        "was_forked_from",
        "has_parent",
        "is_fork",
    }
)


def epoch_ms(value: Any, argument: str = "time") -> int:
    """A time filter's value (epoch milliseconds, a ``datetime`` or an ISO 8601 string)
    as epoch milliseconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return validate.integer(int(validate.number(value, argument)), argument, low=0, high=2**62)
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise DBOSInvalidArgumentError(
                f"{argument} must be epoch milliseconds, a datetime or an ISO 8601 time "
                f"such as 2026-12-01T08:00:00Z, not {value!r}"
            ) from None
        return int(moment.timestamp() * 1000)
    raise DBOSArgumentTypeError(
        f"{argument} must be epoch milliseconds, a datetime or an ISO 8601 string, "
        f"not {type(value).__name__}"
    )


def normalize_filters(filters: Mapping[str, Any]) -> dict[str, Any]:
    """``list_workflows`` keyword filters as listing fields (None values are dropped)."""
    normalized: dict[str, Any] = {}
    for key, value in filters.items():
        if value is None:
            continue
        if key in PLURAL_FILTERS:
            values: Sequence[str] = (
                [validate.text(value, key)]
                if isinstance(value, str)
                else validate.texts(value, key)
            )
            if key == "status":
                for status in values:
                    validate.choice(status, "status", sorted(ALL_STATUSES))
            normalized[PLURAL_FILTERS[key]] = tuple(values)
        elif key in TIME_FILTERS:
            normalized[TIME_FILTERS[key]] = epoch_ms(value, key)
        elif key in ("limit", "offset"):
            normalized[key] = validate.integer(value, key, low=0, high=2**62)
        elif key == "attributes":
            normalized[key] = attributes_rules.encode(value, key)
        elif key == "workflow_id_prefix":
            # One prefix, or several: a workflow whose id starts with any of them (an
            # empty list does not narrow the listing, as in dbos 3.4).
            if isinstance(value, str):
                normalized[key] = validate.text(value, key)
            elif prefixes := validate.texts(value, key):
                normalized[key] = tuple(prefixes)
        elif key in DIRECT_FILTERS:
            normalized[key] = validate.boolean(value, key)
        else:  # what Python says of an unexpected keyword argument: a TypeError
            raise DBOSArgumentTypeError(f"list_workflows() got an unexpected filter {key!r}")
    return normalized
