"""How ``dbos-trio`` shows workflows to a person: readable times, durations and details.

Invariant: human output never shows a raw epoch number; times are UTC to the second
(``2026-01-31 08:00:05 UTC``) and spans are durations (``1 h 2 min``). ``--json`` is the
machine form and keeps every stored number as stored (epoch milliseconds), so a script
loses nothing to rounding. A payload the CLI did not decode (a ``py_pickle`` one without
``--allow-pickle``) is shown as stored and says so, rather than passing for a value.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from dbos_trio._core.human import duration_text, moment_text
from dbos_trio._core.pickled import read_error
from dbos_trio._engine.workflows.status import StepInfo, WorkflowStatus

# Steps whose stored output is a wake-up time in epoch *seconds* (engine/sleep.py).
SLEEP_STEP = "DBOS.sleep"


# One formatting of times and spans for every face (the dashboard's too).
when = moment_text
duration = duration_text


def span(start_ms: Any, end_ms: Any) -> str:
    """The duration between two epoch-ms stamps, or empty if either is missing."""
    if not isinstance(start_ms, int | float) or not isinstance(end_ms, int | float):
        return ""
    return duration(end_ms - start_ms)


def jsonable(value: Any) -> Any:
    """A value as JSON can hold it: attrs records as objects, errors as ``Type: text``."""
    if attrs.has(type(value)):
        return {key: jsonable(item) for key, item in attrs.asdict(value, recurse=False).items()}
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(item) for item in value]
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns under a header line and a rule."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )
    return "\n".join(lines)


def workflows_table(workflows: Sequence[WorkflowStatus]) -> str:
    """One row per workflow: id, name, status, created, how long it ran, queue, version."""
    return table(
        ("workflow id", "name", "status", "created", "took", "queue", "app version"),
        [
            (
                w.workflow_id,
                w.name or "",
                w.status,
                when(w.created_at),
                span(w.created_at, w.completed_at if w.completed_at else None),
                w.queue_name or "",
                w.app_version or "",
            )
            for w in workflows
        ],
    )


def shown_value(value: Any, raw: bool) -> str:
    """A decoded payload as Python shows it; an undecoded one marked as such."""
    if raw:
        return f"{value} (py_pickle, shown as stored: --allow-pickle decodes it)"
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    return repr(value)


def error_summary(value: Any, raw: bool) -> str:
    """One line for a recorded error: ``Type: message``, read without unpickling."""
    reading = read_error(value)
    return reading.summary() if reading is not None else shown_value(value, raw)


def error_details(value: Any) -> list[str]:
    """The lines under a recorded error: each attempt of a step that ran out of retries,
    and the traceback of the error (or of the last attempt), indented."""
    reading = read_error(value)
    return [] if reading is None else reading.details()


def step_output(step: StepInfo, raw: bool = False) -> str:
    """A step's output; a durable sleep's wake-up time (epoch seconds) as a time."""
    if step.output is None:
        return ""
    if step.function_name == SLEEP_STEP and isinstance(step.output, int | float):
        return f"wakes {when(step.output * 1000)}"
    if raw and isinstance(step.output, str):
        return f"{step.output} (as stored)"
    return repr(step.output)


def steps_table(steps: Sequence[StepInfo], raw: bool = False) -> str:
    """One row per step: id, name, started, took, output, error, child workflow.

    ``raw``: py_pickle payloads were left as stored (a string output is marked so)."""
    return table(
        ("step", "name", "started", "took", "output", "error", "child"),
        [
            (
                s.function_id,
                s.function_name,
                when(s.started_at_epoch_ms),
                span(s.started_at_epoch_ms, s.completed_at_epoch_ms),
                step_output(s, raw),
                "" if s.error is None else error_summary(s.error, raw),
                s.child_workflow_id or "",
            )
            for s in steps
        ],
    )


def workflow_detail(status: WorkflowStatus, steps: Sequence[StepInfo], decoded: bool) -> str:
    """Everything ``workflow get`` shows: identity, status, timings, payloads, then steps.

    ``decoded`` is False when py_pickle payloads were left as stored (no --allow-pickle).
    """
    raw = status.serialization == "py_pickle" and not decoded
    lines: list[tuple[str, str]] = [
        ("workflow", status.workflow_id),
        ("name", status.name or ""),
        ("class", status.class_name or ""),
        ("instance", status.config_name or ""),
        ("status", status.status),
        ("application", status.application_name or ""),
        ("app version", status.app_version or ""),
        ("executor", status.executor_id or ""),
        ("queue", status.queue_name or ""),
        ("partition", status.queue_partition_key or ""),
        ("priority", "" if not status.priority else str(status.priority)),
        ("deduplication id", status.deduplication_id or ""),
        ("user", status.authenticated_user or ""),
        ("parent", status.parent_workflow_id or ""),
        ("forked from", status.forked_from or ""),
        ("schedule", status.schedule_name or ""),
        ("created", when(status.created_at)),
        ("delayed until", when(status.delay_until_epoch_ms)),
        ("dequeued", when(status.dequeued_at)),
        ("updated", when(status.updated_at)),
        ("completed", when(status.completed_at)),
        ("took", span(status.created_at, status.completed_at)),
        ("timeout", duration(status.workflow_timeout_ms)),
        ("deadline", when(status.workflow_deadline_epoch_ms)),
        (
            "attempts",
            str(status.recovery_attempts) if status.recovery_attempts else "",
        ),
        ("serialization", status.serialization or ""),
    ]
    if status.input is not None:
        lines.append(("input", _input_text(status.input, raw)))
    if status.output is not None:
        lines.append(("output", shown_value(status.output, raw)))
    if status.error is not None:
        lines.append(("error", error_summary(status.error, raw)))
    shown = [(key, value) for key, value in lines if value]
    width = max(len(key) for key, _ in shown)
    text = "\n".join(f"{key.ljust(width)}  {value}" for key, value in shown)
    if status.error is not None:
        text += "".join(f"\n{' ' * (width + 2)}{line}" for line in error_details(status.error))
    if not steps:
        return text + "\n\nno steps"
    return f"{text}\n\nsteps ({len(steps)}):\n{steps_table(steps, raw)}{failed_steps(steps)}"


def failed_steps(steps: Sequence[StepInfo]) -> str:
    """Under a steps table: for each failed step, its attempts and traceback."""
    blocks = []
    for step in steps:
        details = [] if step.error is None else error_details(step.error)
        if details:
            blocks.append(
                f"\nstep {step.function_id} ({step.function_name}) failed: "
                f"{error_summary(step.error, raw=True)}\n" + "\n".join("  " + d for d in details)
            )
    return "\n" + "\n".join(blocks) if blocks else ""


def _input_text(value: Any, raw: bool) -> str:
    if raw or not isinstance(value, dict):
        return shown_value(value, raw)
    args = value.get("args", ())
    kwargs = value.get("kwargs", {})
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in dict(kwargs).items()]
    return f"({', '.join(parts)})"


def workflow_json(status: WorkflowStatus, steps: Sequence[StepInfo]) -> str:
    """``workflow get --json``: the status's fields as stored, with its steps."""
    document = jsonable(status)
    document["steps"] = jsonable(list(steps))
    return json.dumps(document, indent=2)
