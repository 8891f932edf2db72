"""The workflow list, a workflow's page, and the confirmation page of an action.

The list's filters are those of ``list_workflows`` (status, name, queue, id prefix,
created between two times), newest first, a page of :data:`PAGE_SIZE` rows with
newer/older links. Every value shown is escaped (see :mod:`.markup`); the step timeline
is SVG whose geometry is computed here from the stored timestamps, so no inline style is
needed.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.records import WorkflowRow
from dbos_trio.dashboard._markup import Html, html, join
from dbos_trio.dashboard._render import (
    badge,
    duration,
    notice,
    payload,
    table,
    url,
    when,
    when_ago,
    workflow_link,
)
from dbos_trio.dashboard._source import STATUSES, WorkflowPage

PAGE_SIZE = 50
FILTERS = ("status", "name", "queue", "prefix", "after", "before")
UNFINISHED = frozenset({"PENDING", "ENQUEUED", "DELAYED"})
# Not ERROR: resuming a failed workflow replays its recorded failure (retry is offered).
RESUMABLE = frozenset(
    {"PENDING", "ENQUEUED", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED", "DELAYED"}
)


LIST_HEADERS = (
    "workflow id",
    "name",
    "status",
    "created",
    "duration",
    "error",
    "queue",
    "version",
    "executor",
)


def _took(row: WorkflowRow, now_ms: int | None) -> Html:
    """Finished: created to completed. Running (PENDING): so far, said as such."""
    if row.completed_at is not None:
        return html("{0}", duration(row.created_at, row.completed_at))
    if row.status == "PENDING" and now_ms is not None and row.created_at is not None:
        return html('<span class="note">running {0}</span>', duration(row.created_at, now_ms))
    return Html("")


def workflow_rows(
    rows: list[WorkflowRow], errors: dict[str, str] | None = None, now_ms: int | None = None
) -> Html:
    """Rows of the list; ``errors``: the one-line error of each failed row, by id."""
    errors = errors or {}
    return join(
        html(
            "<tr><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td>"
            '<td class="error-cell">{5}</td><td>{6}</td><td>{7}</td><td>{8}</td></tr>',
            workflow_link(r.workflow_id),
            r.name or "",
            badge(r.status),
            when(r.created_at) if now_ms is None else when_ago(r.created_at, now_ms),
            _took(r, now_ms),
            errors.get(r.workflow_id, ""),
            r.queue_name or "",
            r.application_version or "",
            r.executor_id or "",
        )
        for r in rows
    )


def list_content(
    query: dict[str, str],
    rows: list[WorkflowRow],
    offset: int,
    errors: dict[str, str] | None = None,
    now_ms: int | None = None,
) -> Html:
    status_options = join(
        html(
            '<option value="{0}"{1}>{0}</option>',
            s,
            Html(" selected") if query.get("status") == s else Html(""),
        )
        for s in STATUSES
    )
    form = html(
        '<form class="filters" method="get" action="/workflows">'
        '<label>Status<select name="status"><option value="">any</option>{0}</select></label>'
        '<label>Name<input name="name" value="{1}"></label>'
        '<label>Queue<input name="queue" value="{2}"></label>'
        '<label>Id prefix<input name="prefix" value="{3}"></label>'
        "<label>Created after (UTC)"
        '<input name="after" placeholder="2026-01-31T08:00" value="{4}"></label>'
        "<label>Created before (UTC)"
        '<input name="before" placeholder="2026-01-31T09:00" value="{5}"></label>'
        '<button type="submit">Filter</button> <a href="/workflows">clear</a>'
        '<label class="live"><span><input type="checkbox" id="live"> live</span></label>'
        "</form>",
        status_options,
        *(query.get(name, "") for name in ("name", "queue", "prefix", "after", "before")),
    )
    kept = {k: query[k] for k in FILTERS if query.get(k)}
    links = []
    if offset > 0:
        links.append(
            html(
                '<a href="{0}">← newer</a>',
                url("/workflows", **kept, offset=max(0, offset - PAGE_SIZE) or None),
            )
        )
    if len(rows) == PAGE_SIZE:
        links.append(
            html('<a href="{0}">older →</a>', url("/workflows", **kept, offset=offset + PAGE_SIZE))
        )
    paging = html('<p class="paging">{0}</p>', join(links))
    listing = table(
        LIST_HEADERS, [workflow_rows(rows, errors, now_ms)] if rows else [], body_id="workflow-rows"
    )
    return html("{0}{1}{2}", form, listing, paging)


def _fields(row: WorkflowRow) -> Html:
    fields: list[tuple[str, Any]] = [
        ("status", badge(row.status)),
        ("name", row.name),
        ("class / instance", " / ".join(x for x in (row.class_name, row.config_name) if x)),
        ("application", row.application_name),
        ("version", row.application_version),
        ("executor", row.executor_id),
        ("queue", row.queue_name),
        ("partition", row.queue_partition_key),
        ("deduplication id", row.deduplication_id),
        ("priority", row.priority),
        ("created", when(row.created_at)),
        ("updated", when(row.updated_at)),
        ("dequeued", when(row.started_at_epoch_ms)),
        ("completed", when(row.completed_at)),
        ("duration", duration(row.created_at, row.completed_at)),
        ("delayed until", when(row.delay_until_epoch_ms)),
        ("deadline", when(row.workflow_deadline_epoch_ms)),
        ("recovery attempts", row.recovery_attempts),
        ("parent", workflow_link(row.parent_workflow_id)),
        ("forked from", workflow_link(row.forked_from)),
        ("user", row.authenticated_user),
        ("schedule", row.schedule_name),
        ("serialization", row.serialization),
    ]
    return html(
        '<dl class="fields">{0}</dl>',
        join(html("<dt>{0}</dt><dd>{1}</dd>", k, v) for k, v in fields if v not in (None, "")),
    )


def _bar(start: int | None, end: int | None, origin: int, span: int, failed: bool) -> Html:
    if start is None or end is None or span <= 0:
        return Html("")
    x = 100 * (start - origin) / span
    width = max(0.5, 100 * (end - start) / span)
    return html(
        '<svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" '
        'aria-label="{0}"><rect x="{1}" y="0" width="{2}" height="10" class="{3}"></rect></svg>',
        duration(start, end),
        f"{x:.2f}",
        f"{min(width, 100 - x):.2f}",
        "failed" if failed else "",
    )


def _actions(row: WorkflowRow, read_only: bool) -> Html:
    if read_only:
        return Html("")
    links = []
    workflow_id = row.workflow_id
    if row.status in UNFINISHED or row.status == "PAUSED":
        links.append(("cancel", "Cancel"))
    if row.status in UNFINISHED:
        links.append(("pause", "Pause"))
    if row.status == "PAUSED":
        links.append(("unpause", "Unpause"))
    if row.status in RESUMABLE:
        links.append(("resume", "Resume"))
    if row.status == "ERROR":
        # Not resume: it would replay the recorded failure. Retry forks from the failed step.
        links.append(("retry", "Retry from the failed step"))
    links.append(("fork", "Fork"))
    links.append(("delete", "Delete"))
    return html(
        '<p class="actions">{0}</p>',
        join(
            html(
                '<a id="action-{0}" href="{1}">{2}</a>',
                action,
                url("/confirm", id=workflow_id, action=action),
                label,
            )
            for action, label in links
        ),
    )


def workflow_content(view: WorkflowPage, read_only: bool, done: str | None) -> Html:
    row = view.row
    times = [
        t for s, _, _ in view.steps for t in (s.started_at_ms, s.completed_at_ms) if t is not None
    ]
    origin = min([row.created_at or 0, *times]) if times else (row.created_at or 0)
    finish = max([row.completed_at or 0, *times]) if times else (row.completed_at or 0)
    span = finish - origin
    step_rows = [
        html(
            '<tr class="step"><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td>'
            "<td>{5}</td><td>{6}</td></tr>",
            step.function_id,
            step.function_name,
            when(step.started_at_ms),
            duration(step.started_at_ms, step.completed_at_ms),
            _bar(step.started_at_ms, step.completed_at_ms, origin, span, step.error is not None),
            payload(error) if error is not None else payload(output),
            workflow_link(step.child_workflow_id),
        )
        for step, output, error in view.steps
    ]
    children = [workflow_rows([child]) for child in view.children]
    events = [
        html("<tr><td>{0}</td><td>{1}</td></tr>", e.key, payload(shown)) for e, shown in view.events
    ]
    messages = [
        html(
            "<tr><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td></tr>",
            when(m.created_at_epoch_ms),
            m.topic or "",
            "consumed" if m.consumed else "waiting",
            payload(shown),
        )
        for m, shown in view.messages
    ]
    streams = [
        html("<tr><td>{0}</td><td>{1}</td><td>{2}</td></tr>", s.key, s.offset, payload(shown))
        for s, shown in view.streams
    ]
    return html(
        '{0}{1}{2}<h2>Steps</h2><div id="steps">{6}</div>'
        "<h2>Input</h2>{3}<h2>Output</h2>{4}<h2>Error</h2>{5}<h2>Children</h2>{7}"
        "<h2>Events</h2>{8}<h2>Messages</h2>{9}<h2>Streams</h2>{10}",
        notice(done),
        _actions(row, read_only),
        _fields(row),
        payload(view.inputs),
        payload(view.output),
        payload(view.error),
        join(
            [
                table(
                    ("step", "name", "started", "duration", "timeline", "output / error", "child"),
                    step_rows,
                ),
                _more(view.more_steps, len(step_rows), "steps", "workflow steps"),
            ]
        ),
        table(LIST_HEADERS, children),
        join([table(("key", "value"), events), _more(view.more_events, len(events), "events", "")]),
        table(("sent", "topic", "state", "message"), messages),
        table(("key", "offset", "value"), streams),
    )


def _more(more: bool, shown: int, what: str, command: str) -> Html:
    """A note under a table cut at its limit: how many are shown, and where the rest are."""
    if not more:
        return Html("")
    where = f" (all of them: dbos-trio {command} ID)" if command else ""
    return html('<p class="note">showing the first {0} {1}{2}</p>', shown, what, where)


QUESTIONS = {
    "cancel": "Cancel this workflow? It stops at its next checkpoint, wherever it runs.",
    "resume": "Resume this workflow? It is enqueued again and continues after its last checkpoint.",
    "pause": "Pause this workflow? It stops before its next step (a step running now records "
    "first) and nothing runs it until it is unpaused, restarts included.",
    "unpause": "Unpause this workflow? It is enqueued again and runs on from its first step "
    "not recorded.",
    "retry": "Retry this failed workflow? A new workflow replays the steps before the first "
    "failed one and runs the rest with the application's latest version (fix the code first).",
    "fork": "Fork this workflow? A new workflow replays the steps before the chosen one and "
    "re-runs the rest.",
    "delete": "Delete this workflow and its steps, events, messages and streams? This cannot "
    "be undone.",
}


def confirm_content(row: WorkflowRow, action: str, csrf: str, steps: list[int]) -> Html:
    extra = Html("")
    if action == "fork":
        options = join(html('<option value="{0}">{0}</option>', n) for n in steps or [1])
        extra = html(
            '<p><label>Re-run from step <select name="step" id="fork-step">{0}</select>'
            "</label></p>",
            options,
        )
    elif action == "delete":
        extra = Html(
            '<p><label><input type="checkbox" name="delete_children" value="1"> '
            "also delete its child workflows</label></p>"
        )
    question = QUESTIONS[action]
    return html(
        "<p>{0}</p><p>{1} · {2}</p>"
        '<form method="post" action="/action">'
        '<input type="hidden" name="id" value="{3}"><input type="hidden" name="action" value="{4}">'
        '<input type="hidden" name="csrf" value="{5}">{6}'
        '<button class="danger" type="submit" id="confirm">Confirm: {4}</button> '
        '<a href="{7}">back</a></form>',
        question,
        workflow_link(row.workflow_id),
        badge(row.status),
        row.workflow_id,
        action,
        csrf,
        extra,
        url("/workflow", id=row.workflow_id),
    )
