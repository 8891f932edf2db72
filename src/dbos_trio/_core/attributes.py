"""Workflow attributes: a user's JSON object stored in ``workflow_status.attributes``.

Pure logic. An attributes value is a ``dict`` with ``str`` keys whose values JSON can
hold; it is checked and turned into compact JSON text here, at the call, so a bad value
(a set, a ``datetime``, a NaN, a non-string key) is refused with an error naming the
argument before anything is written — PostgreSQL would refuse it later as a JSONB cast
error, SQLite would store it, and the two backends would disagree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dbos_trio.errors import DBOSArgumentTypeError, DBOSInvalidArgumentError


def encode(value: Any, argument: str) -> str:
    """``value`` (a dict of JSON values) as compact JSON text, or a clear error."""
    if not isinstance(value, Mapping):
        raise DBOSArgumentTypeError(
            f"{argument} must be a dict of JSON values, not {type(value).__name__}"
        )
    for key in value:
        if not isinstance(key, str):
            raise DBOSArgumentTypeError(
                f"{argument}: keys must be str, not {type(key).__name__} ({key!r})"
            )
        if "\x00" in key:
            raise DBOSInvalidArgumentError(f"{argument}: key {key!r} contains NUL")
    try:
        text = json.dumps(dict(value), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise DBOSArgumentTypeError(f"{argument} must hold only JSON values: {error}") from None
    if "\\u0000" in text:
        # PostgreSQL's JSONB cannot hold a NUL character; SQLite's TEXT could.
        raise DBOSInvalidArgumentError(f"{argument} must not contain NUL characters")
    try:
        json.dumps(dict(value), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        # A lone surrogate (text decoded with errors="surrogateescape", a half of an emoji
        # cut in two): no UTF-8 text can hold it. PostgreSQL refuses it inside the
        # database, SQLite stores it; either way it is refused here, at the call.
        bad = error.object[error.start : error.end]
        raise DBOSInvalidArgumentError(
            f"{argument} must be valid Unicode text: it holds the lone surrogate "
            f"{bad!r}, which UTF-8 cannot encode"
        ) from None
    return text


def optional(value: Any, argument: str) -> str | None:
    """:func:`encode`, with None passing through (no attributes)."""
    return None if value is None else encode(value, argument)


def workflow_attributes(value: Any, argument: str) -> str | None:
    """:func:`optional` for a workflow's attributes, its error led by dbos 3.4's words
    ("Invalid workflow attributes ... Attributes must be a dict" / "... JSON-serializable"),
    the same class (a ``TypeError`` or ``ValueError`` as :func:`encode` chose)."""
    try:
        return optional(value, argument)
    except DBOSInvalidArgumentError as error:
        what = "a dict" if not isinstance(value, Mapping) else "JSON-serializable"
        raise type(error)(
            f"Invalid workflow attributes {value!r}. Attributes must be {what}: {error.message}"
        ) from None


def merged(stored: Mapping[str, Any] | None, update: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level merge, as JSONB ``||`` does: keys of ``update`` replace stored ones."""
    return {**(stored or {}), **update}


def combined(*encoded: str | None) -> str | None:
    """Several attribute objects (JSON text, None for none) as one: later keys win (the
    trace carrier ``dbos.otelContext`` goes last, beside the user's attributes)."""
    present = [text for text in encoded if text is not None]
    if len(present) <= 1:
        return present[0] if present else None
    merged: dict[str, Any] = {}
    for text in present:
        merged.update(json.loads(text))
    return json.dumps(merged, separators=(",", ":"))
