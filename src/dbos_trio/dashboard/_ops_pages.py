"""Queues (limits and depth), and executors with application versions (the schedules page
is :mod:`._overview_pages`')."""

from __future__ import annotations

from typing import Any

from dbos_trio._core.admission import QueueConfig
from dbos_trio._core.human import duration_text
from dbos_trio._sysdb.records import ApplicationVersion, ExecutorSummary, QueueDepth
from dbos_trio.dashboard._markup import Html, html
from dbos_trio.dashboard._render import table, url, when, when_ago


def _limit(value: Any) -> str:
    return "" if value is None else str(value)


def _queue_action(config: QueueConfig | None, csrf: str | None) -> Html:
    """A queue's pause or unpause button (a POST form carrying the CSRF token); none when
    read-only (``csrf`` None) or for a queue with no row to pause."""
    if csrf is None or config is None:
        return Html("")
    action = "unpause" if config.paused else "pause"
    return html(
        '<form class="inline" method="post" action="/queue">'
        '<input type="hidden" name="name" value="{0}">'
        '<input type="hidden" name="action" value="{1}">'
        '<input type="hidden" name="csrf" value="{2}">'
        '<button type="submit" class="queue-{1}">{3}</button></form>',
        config.name,
        action,
        csrf,
        action.capitalize(),
    )


def queues_content(
    queues: list[QueueConfig],
    depths: list[QueueDepth],
    oldest: dict[str, int],
    now_ms: int,
    *,
    csrf: str | None = None,
) -> Html:
    """Every queue with its depth, its oldest ENQUEUED row's age (``oldest``: creation
    times by queue), whether it is paused, its limits and (unless read-only: ``csrf``
    None) a pause or unpause button."""
    counts: dict[str, dict[str, int]] = {}
    for depth in depths:
        counts.setdefault(depth.queue_name, {})[depth.status] = depth.count
    names = sorted({q.name for q in queues} | set(counts))
    by_name = {q.name: q for q in queues}
    rows = []
    for name in names:
        config = by_name.get(name)
        count = counts.get(name, {})
        limiter = config.limiter if config is not None else None
        rows.append(
            html(
                "<tr><td>{0}{9}</td><td>{1}</td><td>{10}</td><td>{2}</td><td>{3}</td><td>{4}</td>"
                "<td>{5}</td><td>{6}</td><td>{7}</td><td>{8}</td><td>{11}</td></tr>",
                html('<a href="{0}">{1}</a>', url("/workflows", queue=name), name),
                count.get("ENQUEUED", 0),
                count.get("PENDING", 0),
                count.get("DELAYED", 0),
                _limit(config.global_concurrency if config else None),
                _limit(config.worker_concurrency if config else None),
                "" if limiter is None else f"{limiter.limit} / {limiter.period} s",
                _limit(config.partition_concurrency if config else None),
                (config.application_name or "") if config else "(not in the queues table)",
                Html(' <span class="status status-paused">paused</span>')
                if config is not None and config.paused
                else Html(""),
                duration_text(now_ms - oldest[name]) if name in oldest else "",
                _queue_action(config, csrf),
            )
        )
    return table(
        (
            "queue",
            "enqueued",
            "oldest waiting",
            "running",
            "delayed",
            "global limit",
            "per-worker limit",
            "rate limit",
            "per-partition limit",
            "application",
            "",
        ),
        rows,
    )


def _liveness(e: ExecutorSummary, now_ms: int, live_ms: int) -> Html:
    """What the rows say of an executor: stamped lately, silent with PENDING work, or
    nothing running (an idle executor stamps nothing, so it cannot be told from a gone one)."""
    if not e.pending:
        return Html('<span class="none">nothing running</span>')
    if e.last_updated_at is not None and e.last_updated_at >= now_ms - live_ms:
        return Html('<span class="status status-success">live</span>')
    return html(
        '<span class="status status-error">silent</span> <span class="note">PENDING work '
        "not stamped for {0}: recover it (dbos-trio workflow recover --executor {1}{2})</span>",
        duration_text(now_ms - (e.last_updated_at or now_ms)),
        e.executor_id,
        f" -a {e.application_name}" if e.application_name else "",
    )


def executors_content(
    executors: list[ExecutorSummary],
    versions: list[ApplicationVersion],
    now_ms: int,
    live_ms: int,
) -> Html:
    """Executors as the rows name them, with what their heartbeats say (stamped within
    ``live_ms``), and the registered versions; times with their age."""
    latest: dict[str | None, str] = {}
    for version in versions:  # newest first
        latest.setdefault(version.application_name, version.version_name)
    executor_rows = [
        html(
            "<tr><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td>"
            "<td>{6}</td></tr>",
            e.executor_id,
            e.application_name or "",
            e.application_version or "",
            e.pending,
            e.total,
            when_ago(e.last_updated_at, now_ms),
            _liveness(e, now_ms, live_ms),
        )
        for e in executors
    ]
    version_rows = [
        html(
            "<tr><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td></tr>",
            v.version_name,
            v.application_name or "",
            "latest" if latest.get(v.application_name) == v.version_name else "",
            when_ago(v.version_timestamp, now_ms),
            when(v.created_at),
        )
        for v in versions
    ]
    return html(
        "<h2>Executors</h2><p>As the workflow rows name them. An executor stamps the PENDING "
        "rows it runs every heartbeat interval: one whose PENDING work was not stamped for "
        "three intervals is silent, most likely gone (recovery adopts its work); one with "
        "nothing running stamps nothing, so the rows cannot tell idle from gone.</p>{0}"
        "<h2>Application versions</h2>{1}",
        table(
            (
                "executor id",
                "application",
                "version",
                "pending",
                "workflows",
                "last active",
                "heartbeat",
            ),
            executor_rows,
        ),
        table(("version", "application", "", "promoted", "registered"), version_rows),
    )
