"""Conversions every writer of rows shares, so that they never drift apart.

Pure functions. A workflow row written by a direct start, an enqueue or a client, and a
message sent from a workflow or a client, must be the same row for the same request.
"""

from __future__ import annotations


def seconds_to_ms(seconds: float) -> int:
    """``seconds`` as whole milliseconds, rounded to the nearest (timeouts, delays)."""
    return round(seconds * 1000)


def timeout_ms(seconds: float) -> int:
    """A workflow timeout in milliseconds: at least 1 (a positive timeout never rounds down
    to "no timeout")."""
    return max(1, seconds_to_ms(seconds))


def message_id(idempotency_key: str, destination_id: str) -> str:
    """The ``message_uuid`` of a send with an idempotency key: any number of retried sends
    with the same key to the same destination leave one message (the cross-SDK form)."""
    return f"{idempotency_key}::{destination_id}"
