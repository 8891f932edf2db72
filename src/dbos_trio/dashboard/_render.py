"""The page frame and the small pieces every page uses (times, links, payloads, badges).

Everything here returns :class:`~.markup.Html` built by :func:`~.markup.html`, so stored
text is escaped wherever it lands; URLs are built with ``urlencode`` and then escaped as
attribute values.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from dbos_trio._core.human import duration_text, relative_text
from dbos_trio._core.moments import invalid_time, moment_of
from dbos_trio.dashboard._markup import Html, html, join
from dbos_trio.dashboard._source import Shown

NAV = (
    ("/overview", "Overview"),
    ("/workflows", "Workflows"),
    ("/queues", "Queues"),
    ("/schedules", "Schedules"),
    ("/executors", "Executors & versions"),
)


def url(path: str, **params: Any) -> str:
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return path + ("?" + urlencode(kept) if kept else "")


def when(epoch_ms: int | None) -> Html:
    """A stored stamp as a UTC date to the millisecond (the browser's local time on hover)."""
    if epoch_ms is None:
        return Html("")
    moment = moment_of(epoch_ms)
    if moment is None:
        # Written by hand or by a broken writer: shown for what it is, the page still works.
        return html('<span class="invalid">{0}</span>', invalid_time(epoch_ms))
    return html(
        '<time datetime="{0}">{1}</time>',
        moment.isoformat(timespec="milliseconds"),
        moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC",
    )


def duration(start_ms: int | None, end_ms: int | None) -> str:
    """The span between two stamps as a person reads it (``2.4 s``, ``3 min 20 s``)."""
    if start_ms is None or end_ms is None:
        return ""
    return duration_text(end_ms - start_ms)


def ago(epoch_ms: int | None, now_ms: int) -> Html:
    """How long ago (or how soon) ``epoch_ms`` is, next to a time: ``3 min ago``."""
    text = relative_text(epoch_ms, now_ms)
    return html('<span class="age">{0}</span>', text) if text else Html("")


def when_ago(epoch_ms: int | None, now_ms: int) -> Html:
    """The time (UTC) and, after it, how long ago it is."""
    if epoch_ms is None:
        return Html("")
    return html("{0} {1}", when(epoch_ms), ago(epoch_ms, now_ms))


def badge(status: str) -> Html:
    return html('<span class="status status-{0}">{1}</span>', status.lower(), status)


def workflow_link(workflow_id: str | None) -> Html:
    if not workflow_id:
        return Html("")
    return html('<a class="wfid" href="{0}">{1}</a>', url("/workflow", id=workflow_id), workflow_id)


def payload(shown: Shown | None) -> Html:
    if shown is None:
        return Html('<span class="none">none</span>')
    note = html('<div class="note">{0}</div>', shown.note) if shown.note else Html("")
    kind = "decoded" if shown.decoded else "raw"
    return html('{0}<pre class="payload {1}">{2}</pre>', note, kind, shown.text)


def table(headers: tuple[str, ...], rows: list[Html], *, body_id: str = "") -> Html:
    head = join(html("<th>{0}</th>", h) for h in headers)
    body = join(rows) if rows else html('<tr><td colspan="{0}">nothing</td></tr>', len(headers))
    attribute = html(' id="{0}"', body_id) if body_id else Html("")
    return html(
        "<table><thead><tr>{0}</tr></thead><tbody{1}>{2}</tbody></table>", head, attribute, body
    )


def page(title: str, content: Html, *, active: str = "", read_only: bool = False) -> str:
    nav = join(
        html(
            '<a href="{0}"{1}>{2}</a>',
            path,
            Html(' class="active"') if path == active else Html(""),
            label,
        )
        for path, label in NAV
    )
    mode = Html('<span class="mode">read-only</span>') if read_only else Html("")
    return html(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{0} · dbos-trio</title>"
        '<link rel="stylesheet" href="/static/app.css">'
        '<script src="/static/app.js" defer></script></head>'
        "<body><header><strong>dbos-trio</strong><nav>{1}</nav>{2}</header>"
        "<main><h1>{0}</h1>{3}</main></body></html>",
        title,
        nav,
        mode,
        content,
    )


def notice(text: str | None) -> Html:
    return html('<p class="notice" role="status">{0}</p>', text) if text else Html("")
