"""Stored epoch-millisecond stamps as points in time, and the ones that cannot be.

Rows are written by any process of any SDK, and by hand: a ``created_at`` of 2**62 ms (or a
negative one far enough back) is a valid BIGINT and no date a ``datetime`` can hold, and
``datetime.fromtimestamp`` raises ``ValueError``/``OverflowError`` for it. A reader that
shows rows (the CLI, the dashboard) must show such a value as invalid, never fail the whole
listing on it, and never mistake it for a bad option the user typed. Pure.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any


def moment_of(epoch_ms: Any) -> datetime | None:
    """``epoch_ms`` as an aware UTC datetime; None when it is not a number, or is a number
    no date can hold (out of range, infinite, NaN)."""
    if not isinstance(epoch_ms, int | float) or isinstance(epoch_ms, bool):
        return None
    if isinstance(epoch_ms, float) and not math.isfinite(epoch_ms):
        return None
    try:
        return datetime.fromtimestamp(epoch_ms / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return None


def invalid_time(epoch_ms: Any) -> str:
    """How a stamp that is no time is shown: what is stored, said to be invalid."""
    return f"invalid time ({epoch_ms!r} ms)"
