"""The overview page (work over time, queues, counts, health) and the schedules page with
its next fire times and actions.

Every chart (:mod:`._charts`) is followed by the table of its numbers, so the page reads
the same to a screen reader, in a text browser and in a test. Times are UTC dates with how
long ago they are (:mod:`dbos_trio._core.human`); spans are durations.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from dbos_trio._core.activity import next_fire, parse_fired
from dbos_trio._core.human import duration_text
from dbos_trio._engine.recovery.doctor import Finding
from dbos_trio._engine.schedules.definitions import WorkflowSchedule
from dbos_trio._ops.activity import LATENCY_SAMPLE, Overview
from dbos_trio.dashboard import _charts as charts
from dbos_trio.dashboard._health import panel
from dbos_trio.dashboard._markup import Html, html, join
from dbos_trio.dashboard._render import badge, table, url, when, when_ago

WINDOWS = ((15, "15 min"), (60, "1 hour"), (360, "6 hours"), (1440, "24 hours"))
IN_FLIGHT = ("ENQUEUED", "PENDING", "DELAYED")
FINAL = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


def _windows(minutes: int) -> Html:
    return html(
        '<p class="windows">Window: {0}</p>',
        join(
            html("<strong>{0}</strong>", label)
            if value == minutes
            else html('<a href="{0}">{1}</a>', url("/overview", minutes=value), label)
            for value, label in WINDOWS
        ),
    )


def _counts(view: Overview, minutes: int) -> Html:
    def card(status: str, note: str) -> Html:
        count = view.statuses.get(status, 0)
        return html(
            '<a class="count" href="{0}" id="count-{1}">{2}<span class="number">{3}</span>'
            '<span class="note">{4}</span></a>',
            url("/workflows", status=status),
            status.lower(),
            badge(status),
            count,
            note,
        )

    window = next((label for value, label in WINDOWS if value == minutes), f"{minutes} min")
    return html(
        '<div class="counts">{0}{1}</div>',
        join(card(s, "now") for s in IN_FLIGHT),
        join(card(s, f"last {window}") for s in FINAL),
    )


def _throughput_table(view: Overview) -> Html:
    rows = [
        html(
            "<tr><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td></tr>",
            when(b.start_ms),
            b.succeeded,
            b.failed,
            b.cancelled,
        )
        for b in view.buckets
        if b.succeeded or b.failed or b.cancelled
    ]
    return html(
        '<details class="numbers"><summary>The numbers (minutes with any)</summary>{0}</details>',
        table(("from", "succeeded", "failed", "cancelled"), rows),
    )


def _latency_table(view: Overview) -> Html:
    rows = [
        html(
            "<tr><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td></tr>",
            html('<a href="{0}">{1}</a>', url("/workflows", name=lat.name), lat.name),
            lat.count,
            duration_text(lat.p50),
            duration_text(lat.p95),
            duration_text(lat.p99),
            duration_text(lat.slowest),
        )
        for lat in view.latencies
    ]
    return table(("workflow", "runs", "p50", "p95", "p99", "slowest"), rows)


def _queue_table(view: Overview) -> Html:
    rows = [
        html(
            "<tr><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td></tr>",
            html('<a href="{0}">{1}</a>', url("/workflows", queue=q.queue_name), q.queue_name),
            q.enqueued,
            duration_text(view.now_ms - q.oldest_enqueued_ms)
            if q.oldest_enqueued_ms is not None
            else "",
            q.running,
            q.started,
        )
        for q in view.queues
    ]
    return table(("queue", "enqueued", "oldest waiting", "running", "dequeued in the window"), rows)


def overview_content(view: Overview, findings: Sequence[Finding], minutes: int) -> Html:
    """The whole overview: health first (what needs doing), then the counts, the charts
    and their tables."""
    return html(
        "{0}{1}{2}"
        "<h2>Finished per {3}</h2>{4}{5}"
        '<h2>Latency by workflow</h2><p class="note">Created to finished, of the runs that '
        "succeeded or failed in the window (the latest {13} of them).</p>{6}{7}"
        "<h2>Queues now</h2>{8}{9}"
        '<p class="note">Read at {10}; the window is {11} to {12}.</p>',
        panel(findings),
        _windows(minutes),
        _counts(view, minutes),
        duration_text(view.buckets[0].width_ms) if view.buckets else "minute",
        charts.throughput(view.buckets),
        _throughput_table(view),
        charts.latency_bars(view.latencies),
        _latency_table(view),
        charts.queue_depth(view.queues, view.now_ms),
        _queue_table(view),
        when(view.now_ms),
        when(view.since_ms),
        when(view.until_ms),
        f"{LATENCY_SAMPLE:,}",
    )


# --- schedules -----------------------------------------------------------------------


def _schedule_actions(schedule: WorkflowSchedule, csrf: str | None) -> Html:
    if csrf is None:
        return Html("")
    toggle = "pause" if schedule.status == "ACTIVE" else "resume"
    buttons = ((toggle, toggle.capitalize()), ("trigger", "Trigger now"))
    return join(
        html(
            '<form class="inline" method="post" action="/schedule">'
            '<input type="hidden" name="name" value="{0}">'
            '<input type="hidden" name="action" value="{1}">'
            '<input type="hidden" name="csrf" value="{2}">'
            '<button type="submit" class="schedule-{1}">{3}</button></form>',
            schedule.schedule_name,
            action,
            csrf,
            label,
        )
        for action, label in buttons
    )


def _next(schedule: WorkflowSchedule, now_ms: int) -> Html:
    if schedule.status != "ACTIVE":
        return Html('<span class="none">paused</span>')
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    tick = next_fire(schedule.schedule, schedule.cron_timezone, now)
    if tick is None:
        return Html('<span class="invalid">cannot be computed here</span>')
    return when_ago(round(tick.timestamp() * 1000), now_ms)


def schedules_content(
    schedules: Sequence[WorkflowSchedule], now_ms: int, csrf: str | None, done: Html
) -> Html:
    """Every schedule with its next fire time, last firing, and (unless read-only: ``csrf``
    None) pause or resume and trigger buttons."""
    rows = []
    for s in schedules:
        fired = parse_fired(s.last_fired_at)
        rows.append(
            html(
                '<tr id="schedule-{0}"><td>{1}</td><td>{2}</td><td><code>{3}</code>{4}</td>'
                "<td>{5}</td><td>{6}</td><td>{7}</td><td>{8}</td><td>{9}</td><td>{10}</td></tr>",
                s.schedule_name,
                s.schedule_name,
                s.workflow_name
                if not s.workflow_class_name
                else f"{s.workflow_class_name}.{s.workflow_name}",
                s.schedule,
                html(' <span class="note">{0}</span>', s.cron_timezone)
                if s.cron_timezone
                else Html(""),
                badge(s.status),
                _next(s, now_ms),
                when_ago(round(fired.timestamp() * 1000), now_ms)
                if fired is not None
                else (s.last_fired_at or Html('<span class="none">never</span>')),
                s.queue_name or "",
                html(
                    '<a href="{0}">runs</a>', url("/workflows", prefix=f"sched-{s.schedule_name}-")
                ),
                _schedule_actions(s, csrf),
            )
        )
    return html(
        "{0}{1}",
        done,
        table(
            (
                "schedule",
                "workflow",
                "cron",
                "status",
                "next fire",
                "last fired",
                "queue",
                "",
                "actions",
            ),
            rows,
        ),
    )
