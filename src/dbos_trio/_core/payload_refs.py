"""The reference a row keeps for a value held in a payload store (pure: no I/O).

Invariant: a reference can never be read as a real value of any format we write, and
is recognised by its first characters alone. Its text is::

    dbos_trio_payload:1:<sha256 of the stored text, 64 lowercase hex>:<size in bytes>

* ``py_pickle`` text is base64 (``A-Z a-z 0-9 + / =``): it never holds ``_`` or ``:``.
* ``portable_json`` text is a JSON document: a bare word such as ``dbos_trio_payload`` is
  not JSON, so no JSON value starts this way.
* a custom serializer could in principle write it: the codec refuses to store such text
  inline (:func:`looks_like_reference`) rather than risk reading it back as a reference.

``1`` is the format's version: a reader refuses a version it does not know instead of
guessing. The ``serialization`` column beside it still names the format of the stored
text, so reading a resolved value is exactly reading an inline one.
"""

from __future__ import annotations

import hashlib
import re

import attrs

# What every reference starts with; also the prefix the garbage collector's read filters on.
REFERENCE_PREFIX = "dbos_trio_payload:"
REFERENCE_VERSION = 1
_REFERENCE = re.compile(r"dbos_trio_payload:(\d+):([0-9a-f]{64}):(\d+)")


@attrs.frozen
class PayloadRef:
    """A value held in a payload store: its content hash and its size in bytes."""

    sha256: str
    size: int

    def text(self) -> str:
        """The reference as a row stores it."""
        return f"{REFERENCE_PREFIX}{REFERENCE_VERSION}:{self.sha256}:{self.size}"

    def __repr__(self) -> str:
        # What a face shows when it has no store to read the value from.
        return f"<stored in the payload store: sha256 {self.sha256}, {self.size:,} bytes>"

    def __str__(self) -> str:
        return repr(self)


def looks_like_reference(text: str | None) -> bool:
    """Whether ``text`` is (or claims to be) a reference: it starts with the prefix."""
    return text is not None and text.startswith(REFERENCE_PREFIX)


def parse_reference(text: str) -> PayloadRef:
    """The reference ``text`` holds; ``ValueError`` naming the problem if it is malformed
    or of a version this code does not read."""
    match = _REFERENCE.fullmatch(text)
    if match is None:
        raise ValueError(f"malformed payload reference {text[:120]!r}")
    version, digest, size = match.groups()
    if int(version) != REFERENCE_VERSION:
        raise ValueError(
            f"payload reference version {version} is not readable here (this reads "
            f"version {REFERENCE_VERSION}): upgrade dbos_trio"
        )
    return PayloadRef(sha256=digest, size=int(size))


def reference_for(data: bytes) -> PayloadRef:
    """The reference of ``data``: its sha256 and its length."""
    return PayloadRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
