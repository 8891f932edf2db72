"""Random identifiers: version-4 UUIDs as text, from the OS's random source.

Every start and enqueue needs two (the workflow id, the row's owner or creator token),
and ``str(uuid.uuid4())`` costs one ``getrandom`` system call and a ``UUID`` object per
id (3.4 µs, against 1.1 µs here), a noticeable part of an enqueue's client time. The
random bytes are read from ``os.urandom`` for many ids at once and formatted directly;
the ids are the same kind (122 random bits from the same source, RFC 4122 version and
variant bits), so nothing that stores or parses them can tell.

Owner tokens (:func:`heartbeat_owner_token`) carry a mark in place of the version digit and
the three digits after it, so that what a row's ``owner_xid`` holds says who owns it: a
dbos_trio execution, which stamps its row every heartbeat interval, so its silence means
something, or a writer that never stamps (the official SDKs write version-4 tokens), whose
silence means nothing. Automatic adoption judges only the former.

Invariant: no two calls return ids cut from the same bytes. Each thread draws from its
own buffer (two threads sharing one could read the same offset), and a forked child
discards the buffer it inherited (otherwise parent and child would hand out the same
ids).
"""

from __future__ import annotations

import os
import threading

_IDS_PER_READ = 256
_BUFFER_BYTES = 16 * _IDS_PER_READ
# The variant's hex digit (binary 10xx) from the two random bits of the digit it replaces.
_VARIANT_DIGITS = "89ab"


class _Buffer(threading.local):
    def __init__(self) -> None:
        self.data = b""
        self.offset = _BUFFER_BYTES


_buffer = _Buffer()


def _forget_inherited_buffer() -> None:
    global _buffer
    _buffer = _Buffer()


os.register_at_fork(after_in_child=_forget_inherited_buffer)


def random_uuid() -> str:
    """A new random (version 4) UUID in its canonical text form, as
    ``str(uuid.uuid4())`` gives. Raises what ``os.urandom`` raises (never in practice)."""
    buffer = _buffer
    offset = buffer.offset
    if offset >= _BUFFER_BYTES:
        buffer.data = os.urandom(_BUFFER_BYTES)
        offset = 0
    buffer.offset = offset + 16
    data = buffer.data
    text = data[offset : offset + 16].hex()
    # The version digit (4) and the variant digit overwrite random digits: 122 bits stay.
    variant = _VARIANT_DIGITS[(data[offset + 8] >> 4) & 3]
    return f"{text[:8]}-{text[8:12]}-4{text[13:16]}-{variant}{text[17:20]}-{text[20:]}"


# Version 8 ("custom") and the digits "d70": a token of a dbos_trio execution, which stamps
# its row's updated_at every heartbeat interval while it runs.
HEARTBEAT_OWNER_MARK = "8d70"
# Where the mark stands in the token's text (1-based, as SQL's substr counts).
HEARTBEAT_OWNER_MARK_POSITION = 15


def heartbeat_owner_token() -> str:
    """A new owner token for an execution of this process: a UUID (version 8) with 106
    random bits and the mark :data:`HEARTBEAT_OWNER_MARK`, which says that its executor
    stamps the row while it runs (see the module docstring)."""
    token = random_uuid()
    start = HEARTBEAT_OWNER_MARK_POSITION - 1
    return token[:start] + HEARTBEAT_OWNER_MARK + token[start + 4 :]


def is_heartbeat_owner_token(token: str | None) -> bool:
    """Whether ``token`` was made by :func:`heartbeat_owner_token`."""
    start = HEARTBEAT_OWNER_MARK_POSITION - 1
    return token is not None and token[start : start + 4] == HEARTBEAT_OWNER_MARK
