"""Previews of large stored payloads, for the faces that show values to a person.

Invariant: the CLI and the dashboard never decode a payload over
:data:`PREVIEW_THRESHOLD_BYTES` to show it — decoding a pickle of tens of megabytes (or
printing its repr) costs time and memory for a screen nobody reads whole. They show a
:class:`PayloadPreview` instead: its size, its format and the start of the text as
stored. The API (``get_workflow_status``, ``list_workflow_steps``) still returns whole
values: previews are asked for by the faces only.

Nor do they *read* such a payload whole: they ask the system database for bounded rows
(:mod:`dbos_trio._sysdb.bounded`), in which a payload over the threshold comes as its first
:data:`PREVIEW_CHARS` characters and its size, measured by the database, so a preview costs
the same whether the value is 100 KB or 50 MB.
"""

from __future__ import annotations

import attrs

# Payloads larger than this (bytes, as stored: UTF-8) are previewed, not decoded, by the
# CLI and the dashboard, and not read whole by them.
PREVIEW_THRESHOLD_BYTES = 64 * 1024
# The characters of the stored text a preview shows.
PREVIEW_CHARS = 500


@attrs.frozen
class PayloadPreview:
    """A stored payload too large to show whole: its size, format and first characters."""

    size: int  # bytes as stored (UTF-8)
    format: str | None
    head: str

    def __repr__(self) -> str:
        return (
            f"<{self.size:,} bytes stored as {self.format or 'the default format'}, "
            f"not decoded to show; it starts: {self.head!r}...>"
        )

    def __str__(self) -> str:
        return repr(self)


def stored_bytes(text: str) -> int:
    """The bytes ``text`` takes as stored (UTF-8; ``str.isascii`` answers without a scan)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def preview_of(raw: str | None, fmt: str | None) -> PayloadPreview | None:
    """A preview of ``raw`` if it is over the threshold, else None (show it decoded)."""
    if raw is None or len(raw) * 4 <= PREVIEW_THRESHOLD_BYTES:  # at most 4 bytes a char
        return None
    size = stored_bytes(raw)
    if size <= PREVIEW_THRESHOLD_BYTES:
        return None
    return PayloadPreview(size=size, format=fmt, head=raw[:PREVIEW_CHARS])


def clipped_preview(head: str, size: int, fmt: str | None) -> PayloadPreview:
    """The preview of a payload a bounded read returned only the start of (``head``), with
    the ``size`` in bytes the database measured."""
    return PayloadPreview(size=size, format=fmt, head=head[:PREVIEW_CHARS])
