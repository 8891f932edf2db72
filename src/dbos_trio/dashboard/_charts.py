"""Charts as inline SVG drawn on the server: no script, no library, nothing fetched.

Invariants, and why:

* **Readable without a script.** Every chart is complete markup when the page arrives: axis
  ticks and labels are ``<text>``, each bar carries a ``<title>`` (the browser's tooltip
  and a screen reader's name for it), the chart has a legend and an ``aria-label``
  summary, and its numbers are also given as a table next to it (:mod:`._overview_pages`).
* **Nothing inline that the policy forbids.** The Content-Security-Policy allows no inline
  style, so geometry and colour are SVG presentation attributes (``x``, ``fill``), which
  are not styles; every text in the chart passes through :func:`~.markup.html`'s escaping.
* **Scales start at zero and end on a round number** (1, 2 or 5 times a power of ten), so
  a bar's height reads as its value against the ticks.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from dbos_trio._core.activity import Bucket, Latency, QueueLoad
from dbos_trio._core.human import duration_text
from dbos_trio.dashboard._markup import Html, html, join

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 30, 34
SERIES = (  # what finished, bottom to top: (field, label, colour)
    ("succeeded", "succeeded", "#16a34a"),
    ("failed", "failed", "#dc2626"),
    ("cancelled", "cancelled", "#9ca3af"),
)
LATENCY_SERIES = (("p50", "#1d4ed8"), ("p95", "#60a5fa"), ("p99", "#bfdbfe"))


def nice_ceiling(value: float) -> int:
    """The smallest of 1, 2, 5 x 10^k at or above ``value`` (at least 1)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def clock(ms: int) -> str:
    """An epoch-ms instant as ``HH:MM`` (UTC), the tick label of a time axis."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M")


def _legend(items: Sequence[tuple[str, str]], x: float) -> Html:
    parts = []
    for label, colour in items:
        parts.append(
            html(
                '<rect x="{0}" y="8" width="10" height="10" fill="{1}"></rect>'
                '<text x="{2}" y="17" class="legend">{3}</text>',
                f"{x:.0f}",
                colour,
                f"{x + 14:.0f}",
                label,
            )
        )
        x += 14 + 8 * len(label) + 14
    return join(parts)


def throughput(buckets: Sequence[Bucket]) -> Html:
    """Stacked bars of what finished in each bucket (succeeded, failed, cancelled), with a
    count axis, a time axis (UTC) and a legend."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    totals = [b.succeeded + b.failed + b.cancelled for b in buckets]
    top = nice_ceiling(max(totals, default=0))
    slot = plot_w / max(1, len(buckets))
    bars = []
    for index, bucket in enumerate(buckets):
        x = LEFT + index * slot + slot * 0.1
        base = TOP + plot_h
        tip = html(
            "{0} UTC, {1}: {2} succeeded, {3} failed, {4} cancelled",
            clock(bucket.start_ms),
            duration_text(bucket.width_ms),
            bucket.succeeded,
            bucket.failed,
            bucket.cancelled,
        )
        pieces = []
        for field, _label, colour in SERIES:
            value = getattr(bucket, field)
            if not value:
                continue
            h = plot_h * value / top
            base -= h
            pieces.append(
                html(
                    '<rect class="bar-{0}" x="{1}" y="{2}" width="{3}" height="{4}" '
                    'fill="{5}"></rect>',
                    field,
                    f"{x:.1f}",
                    f"{base:.1f}",
                    f"{slot * 0.8:.1f}",
                    f"{h:.1f}",
                    colour,
                )
            )
        # An invisible full-height target, so even an empty minute has its tooltip.
        bars.append(
            html(
                '<g class="bucket"><title>{0}</title><rect x="{1}" y="{2}" width="{3}" '
                'height="{4}" fill="transparent"></rect>{5}</g>',
                tip,
                f"{LEFT + index * slot:.1f}",
                TOP,
                f"{slot:.1f}",
                plot_h,
                join(pieces),
            )
        )
    every = max(1, round(len(buckets) / 6))
    x_ticks = [
        html(
            '<text x="{0}" y="{1}" class="tick" text-anchor="middle">{2}</text>',
            f"{LEFT + (index + 0.5) * slot:.1f}",
            HEIGHT - BOTTOM + 16,
            clock(bucket.start_ms),
        )
        for index, bucket in enumerate(buckets)
        if index % every == 0
    ]
    summary = html(
        "Workflows finished per {0} over the window: {1} succeeded, {2} failed, {3} "
        "cancelled (the same numbers are in the table below)",
        duration_text(buckets[0].width_ms) if buckets else "minute",
        sum(b.succeeded for b in buckets),
        sum(b.failed for b in buckets),
        sum(b.cancelled for b in buckets),
    )
    return html(
        '<svg class="chart" id="throughput-chart" viewBox="0 0 {0} {1}" role="img" '
        'aria-label="{2}" xmlns="http://www.w3.org/2000/svg">{3}{4}{5}{6}'
        '<text x="{7}" y="{1}" class="tick" text-anchor="end" dy="-2">time (UTC)</text>'
        "</svg>",
        WIDTH,
        HEIGHT,
        summary,
        _y_axis(top, plot_w, plot_h, "workflows"),
        join(bars),
        join(x_ticks),
        _legend([(label, colour) for _f, label, colour in SERIES], WIDTH - RIGHT - 300),
        WIDTH - RIGHT,
    )


def _y_axis(top: int, plot_w: float, plot_h: float, label: str) -> Html:
    # The finest whole step of at most five intervals: a tick of 2.5 workflows would read
    # as a count nobody had.
    step = next(top // parts for parts in (5, 4, 2, 1) if top % parts == 0)
    ticks = []
    for value in range(0, top + 1, step):
        y = TOP + plot_h * (1 - value / top)
        ticks.append(
            html(
                '<line x1="{0}" x2="{1}" y1="{2}" y2="{2}" class="grid" stroke="#e5e7eb">'
                '</line><text x="{3}" y="{4}" class="tick" text-anchor="end">{5}</text>',
                LEFT,
                f"{LEFT + plot_w:.1f}",
                f"{y:.1f}",
                LEFT - 6,
                f"{y + 4:.1f}",
                value,
            )
        )
    return html(
        '{0}<line x1="{1}" x2="{1}" y1="{2}" y2="{3}" stroke="#6b7280"></line>'
        '<text x="4" y="{4}" class="tick">{5}</text>',
        join(ticks),
        LEFT,
        TOP,
        f"{TOP + plot_h:.1f}",
        TOP - 14,
        label,
    )


def horizontal_bars(
    chart_id: str, rows: Sequence[tuple[str, int, str]], unit: str, colour: str
) -> Html:
    """One labelled horizontal bar per (label, value, note), on a common scale from 0."""
    if not rows:
        return Html("")
    row_h, label_w = 24, 180
    height = TOP + row_h * len(rows) + 10
    top = nice_ceiling(max(value for _l, value, _n in rows))
    plot_w = WIDTH - label_w - RIGHT - 160
    bars = []
    for index, (label, value, note) in enumerate(rows):
        y = TOP + index * row_h
        w = plot_w * value / top
        bars.append(
            html(
                "<g><title>{0}: {1} {2}{3}</title>"
                '<text x="{4}" y="{5}" class="tick" text-anchor="end">{6}</text>'
                '<rect x="{7}" y="{8}" width="{9}" height="{10}" fill="{11}"></rect>'
                '<text x="{12}" y="{5}" class="tick">{1} {2}{3}</text></g>',
                label,
                value,
                unit,
                f" · {note}" if note else "",
                label_w - 8,
                y + 15,
                label if len(label) <= 24 else label[:23] + "…",
                label_w,
                y + 4,
                f"{max(w, 1 if value else 0):.1f}",
                row_h - 8,
                colour,
                f"{label_w + w + 6:.1f}",
            )
        )
    return html(
        '<svg class="chart" id="{0}" viewBox="0 0 {1} {2}" role="img" aria-label="{3}" '
        'xmlns="http://www.w3.org/2000/svg"><text x="{4}" y="18" class="tick">scale 0 to {5} '
        "{6}</text>{7}</svg>",
        chart_id,
        WIDTH,
        height,
        f"{unit} by {chart_id.removesuffix('-chart')} (the table below has the numbers)",
        label_w,
        top,
        unit,
        join(bars),
    )


def queue_depth(loads: Sequence[QueueLoad], now_ms: int) -> Html:
    """ENQUEUED rows per queue, each bar noting its oldest row's age."""
    rows = [
        (
            load.queue_name,
            load.enqueued,
            "oldest waiting " + duration_text(now_ms - load.oldest_enqueued_ms)
            if load.oldest_enqueued_ms is not None
            else "",
        )
        for load in loads
        if load.enqueued
    ]
    return horizontal_bars("queue-depth-chart", rows, "enqueued", "#d97706")


def latency_bars(latencies: Sequence[Latency]) -> Html:
    """Per workflow name, its p50, p95 and p99 latencies as nested bars on one scale."""
    if not latencies:
        return Html("")
    row_h, label_w = 26, 180
    height = TOP + row_h * len(latencies) + 10
    plot_w = WIDTH - label_w - RIGHT - 150
    top = nice_ceiling(max(latency.p99 for latency in latencies))
    rows = []
    for index, latency in enumerate(latencies):
        y = TOP + index * row_h
        bars = [
            html(
                '<rect x="{0}" y="{1}" width="{2}" height="{3}" fill="{4}"></rect>',
                label_w,
                y + 4,
                f"{max(plot_w * getattr(latency, field) / top, 1):.1f}",
                row_h - 8,
                colour,
            )
            for field, colour in reversed(LATENCY_SERIES)  # the longest drawn first
        ]
        rows.append(
            html(
                "<g><title>{0}: p50 {1}, p95 {2}, p99 {3} over {4} runs</title>"
                '<text x="{5}" y="{6}" class="tick" text-anchor="end">{7}</text>{8}'
                '<text x="{9}" y="{6}" class="tick">p95 {2}</text></g>',
                latency.name,
                duration_text(latency.p50),
                duration_text(latency.p95),
                duration_text(latency.p99),
                latency.count,
                label_w - 8,
                y + 17,
                latency.name if len(latency.name) <= 24 else latency.name[:23] + "…",
                join(bars),
                f"{label_w + plot_w * latency.p99 / top + 6:.1f}",
            )
        )
    return html(
        '<svg class="chart" id="latency-chart" viewBox="0 0 {0} {1}" role="img" '
        'aria-label="Latency percentiles by workflow name (the table below has the numbers)" '
        'xmlns="http://www.w3.org/2000/svg"><text x="{2}" y="18" class="tick">0 to {3}</text>'
        "{4}{5}</svg>",
        WIDTH,
        height,
        label_w,
        duration_text(top),
        _legend([(label, colour) for label, colour in LATENCY_SERIES], WIDTH - RIGHT - 220),
        join(rows),
    )
