"""The rules every value passed to a public call must keep, checked before anything is
written.

Pure functions, no I/O: each returns the value (normalized where that is harmless, e.g.
an ``int`` of seconds as a ``float``) or raises an error that names the argument and the
rule it broke — :class:`DBOSInvalidArgumentError` (a ``ValueError``) for a value out of
bounds, :class:`DBOSArgumentTypeError` (a ``TypeError``) for one of the wrong type — so
the same call fails the same way on every backend, and a rejected call leaves the
database untouched.

The rules, and why:

* **Text** (ids, names, topics, keys, queue and partition names, deduplication ids): a
  ``str``, non-empty, with no NUL (PostgreSQL cannot store it in ``text``; SQLite can,
  and the two would disagree), no lone surrogate (not encodable in UTF-8), and at most
  :data:`MAX_TEXT_BYTES` bytes in UTF-8: the system tables index up to four such values
  in one b-tree entry (the partition-dequeue index: queue, partition key, workflow id,
  application name), and a b-tree entry holds at most 2704 bytes on PostgreSQL's 8 kB
  pages. 600 bytes each keeps the widest entry under that, measured by a test. Two
  columns are narrower still: a workflow's class name and configured-instance name are
  ``VARCHAR(255)`` in the schema every SDK shares, so they also take at most
  :data:`MAX_NAME_CHARS` characters (PostgreSQL refuses more; SQLite would store them).
* **Numbers**: real numbers (not ``bool``), never NaN; durations finite unless the call
  says it may wait forever, and at most :data:`MAX_SECONDS` (they are stored as
  milliseconds in 64-bit columns); counts within their column's range.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from dbos_trio.errors import DBOSArgumentTypeError, DBOSInvalidArgumentError

MAX_TEXT_BYTES = 600
"""The most bytes (UTF-8) an id, name, topic or key may have."""
MAX_NAME_CHARS = 255
"""The most characters a class name or configured-instance name may have (VARCHAR(255))."""
MAX_SECONDS = 1e9
"""The longest duration (about 31 years) a timeout, delay or interval may be."""
INT32_MAX = 2**31 - 1


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def text(
    value: Any, argument: str, *, max_bytes: int = MAX_TEXT_BYTES, max_chars: int | None = None
) -> str:
    """A non-empty string that every backend stores as it is (see the module docs); with
    ``max_chars``, also at most that many characters."""
    if not isinstance(value, str):
        raise DBOSArgumentTypeError(
            f"{argument} must be a str, not {type(value).__name__} ({_describe(value)})"
        )
    if not value:
        raise DBOSInvalidArgumentError(f"{argument} must be a non-empty string")
    if "\x00" in value:
        raise DBOSInvalidArgumentError(f"{argument} must not contain a NUL character (\\x00)")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise DBOSInvalidArgumentError(
            f"{argument} must not contain a lone surrogate (it is not valid Unicode text)"
        ) from None
    if size > max_bytes:
        raise DBOSInvalidArgumentError(
            f"{argument} is {size} bytes in UTF-8; at most {max_bytes} are allowed "
            "(the system database indexes it)"
        )
    if max_chars is not None and len(value) > max_chars:
        raise DBOSInvalidArgumentError(
            f"{argument} is {len(value)} characters; at most {max_chars} are allowed "
            "(the system database stores it as VARCHAR)"
        )
    return value


def optional_text(
    value: Any, argument: str, *, max_bytes: int = MAX_TEXT_BYTES, max_chars: int | None = None
) -> str | None:
    """None, or :func:`text`."""
    if value is None:
        return None
    return text(value, argument, max_bytes=max_bytes, max_chars=max_chars)


def texts(value: Any, argument: str) -> list[str]:
    """A list of :func:`text` values (a single ``str`` is refused: it is not a list of
    ids, and iterating it would name each of its characters)."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise DBOSArgumentTypeError(
            f"{argument} must be a list of str, not {type(value).__name__} ({_describe(value)})"
        )
    return [text(item, f"{argument}[{index}]") for index, item in enumerate(value)]


def number(value: Any, argument: str) -> float:
    """A real number (``int`` or ``float``, not ``bool``), not NaN."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DBOSArgumentTypeError(
            f"{argument} must be a number, not {type(value).__name__} ({_describe(value)})"
        )
    if math.isnan(value):
        raise DBOSInvalidArgumentError(f"{argument} must be a number, not NaN")
    return float(value)


def seconds(
    value: Any,
    argument: str,
    *,
    positive: bool = False,
    forever_allowed: bool = False,
) -> float:
    """A duration in seconds: >= 0 (> 0 if ``positive``), at most :data:`MAX_SECONDS`
    (or infinite, where ``forever_allowed``)."""
    seconds_ = number(value, argument)
    rule = "> 0" if positive else ">= 0"
    if seconds_ < 0:  # dbos 3.4's words first
        raise DBOSInvalidArgumentError(
            f"{argument} must not be negative, got {_describe(value)} (it must be {rule})"
        )
    if positive and seconds_ == 0:
        raise DBOSInvalidArgumentError(f"{argument} must be {rule}, not {_describe(value)}")
    if seconds_ == math.inf and forever_allowed:
        return seconds_
    if seconds_ > MAX_SECONDS:
        raise DBOSInvalidArgumentError(
            f"{argument} must be at most {MAX_SECONDS:g} seconds, not {_describe(value)}"
        )
    return seconds_


def optional_seconds(
    value: Any, argument: str, *, positive: bool = False, forever_allowed: bool = False
) -> float | None:
    """None, or :func:`seconds`."""
    if value is None:
        return None
    return seconds(value, argument, positive=positive, forever_allowed=forever_allowed)


def integer(value: Any, argument: str, *, low: int | None = None, high: int | None = None) -> int:
    """An ``int`` (not ``bool``) within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise DBOSArgumentTypeError(
            f"{argument} must be an int, not {type(value).__name__} ({_describe(value)})"
        )
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (
            f"between {low} and {high}"
            if low is not None and high is not None
            else (f"at least {low}" if low is not None else f"at most {high}")
        )
        raise DBOSInvalidArgumentError(f"{argument} must be {bounds}, not {value}")
    return value


def optional_integer(
    value: Any, argument: str, *, low: int | None = None, high: int | None = None
) -> int | None:
    return None if value is None else integer(value, argument, low=low, high=high)


def boolean(value: Any, argument: str) -> bool:
    if not isinstance(value, bool):
        raise DBOSArgumentTypeError(f"{argument} must be True or False, not {type(value).__name__}")
    return value


def choice(value: Any, argument: str, allowed: Iterable[Any]) -> Any:
    """One of ``allowed``."""
    options = list(allowed)
    if value not in options:
        raise DBOSInvalidArgumentError(
            f"{argument} must be one of {', '.join(map(repr, options))}, not {_describe(value)}"
        )
    return value
