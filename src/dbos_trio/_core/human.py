"""Times and spans as a person reads them: the one formatting of the dashboard's pages.

Invariant: no page shows a raw epoch number. A moment is a UTC date to the second
(``2026-01-31 08:00:05 UTC``), a span a short duration (``350 ms``, ``2.4 s``,
``3 min 20 s``, ``2 h 5 min``, ``3 d 4 h``), and a moment near now may add how long ago
(or how soon) it is. A stored number no date can hold is shown as what it is
(:func:`~dbos_trio._core.moments.invalid_time`), never raised. Pure.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._core.moments import invalid_time, moment_of

_UNITS = (("d", 86400, "h", 3600), ("h", 3600, "min", 60), ("min", 60, "s", 1))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def moment_text(epoch_ms: Any) -> str:
    """Epoch milliseconds as ``YYYY-MM-DD HH:MM:SS UTC``; empty for a missing value."""
    if not _number(epoch_ms):
        return ""
    moment = moment_of(epoch_ms)
    if moment is None:
        return invalid_time(epoch_ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def duration_text(ms: Any) -> str:
    """Milliseconds as a short duration; empty for a missing or negative value."""
    if not _number(ms) or ms < 0 or ms != ms:
        return ""
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    whole = round(seconds)
    for unit, size, smaller, smaller_size in _UNITS:
        if whole >= size:
            rest = (whole % size) // smaller_size
            return f"{whole // size} {unit}" + (f" {rest} {smaller}" if rest else "")
    return f"{whole} s"  # pragma: no cover - 60 s or more always has a unit above


def relative_text(epoch_ms: Any, now_ms: int) -> str:
    """How far ``epoch_ms`` is from ``now_ms``: ``3 min ago``, ``in 2 h``, ``just now``
    (within a second); empty for a missing value or one no date can hold."""
    if not _number(epoch_ms) or moment_of(epoch_ms) is None:
        return ""
    delta = now_ms - epoch_ms
    if abs(delta) < 1000:
        return "just now"
    span = duration_text(abs(delta)).split(" ")
    # The largest unit only ("3 min ago", not "3 min 20 s ago"): an age is a glance.
    short = " ".join(span[:2])
    return f"{short} ago" if delta > 0 else f"in {short}"
