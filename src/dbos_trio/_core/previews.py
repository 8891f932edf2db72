"""Previews of large stored payloads, for the faces that show values to a person.

Invariant: the CLI and the dashboard never decode a payload over
:data:`PREVIEW_THRESHOLD_BYTES` to show it — decoding a pickle of tens of megabytes (or
printing its repr) costs time and memory for a screen nobody reads whole. They show a
:class:`PayloadPreview` instead: its size, its format and the start of the text as
stored. The API (``get_workflow_status``, ``list_workflow_steps``) still returns whole
values: previews are asked for by the faces only.
"""

from __future__ import annotations

import attrs

# Payloads larger than this are previewed, not decoded, by the CLI and the dashboard.
PREVIEW_THRESHOLD_BYTES = 64 * 1024
# The characters of the stored text a preview shows.
PREVIEW_CHARS = 500


@attrs.frozen
class PayloadPreview:
    """A stored payload too large to show whole: its size, format and first characters."""

    size: int  # characters as stored (bytes, for the ASCII of base64 and most JSON)
    format: str | None
    head: str

    def __repr__(self) -> str:
        return (
            f"<{self.size:,} characters stored as {self.format or 'the default format'}, "
            f"not decoded to show; it starts: {self.head!r}...>"
        )

    def __str__(self) -> str:
        return repr(self)


def preview_of(raw: str | None, fmt: str | None) -> PayloadPreview | None:
    """A preview of ``raw`` if it is over the threshold, else None (show it decoded)."""
    if raw is None or len(raw) <= PREVIEW_THRESHOLD_BYTES:
        return None
    return PayloadPreview(size=len(raw), format=fmt, head=raw[:PREVIEW_CHARS])
