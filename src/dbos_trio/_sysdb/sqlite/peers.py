"""Wakeups between backends of one process that share a database file.

SQLite has no LISTEN/NOTIFY: a waiter in ``recv``/``get_event``/``read_stream`` finds work
written by *another process* by re-checking every ``recheck_interval``. Within one
process, though, every backend open on the same file knows when it commits a message, an
event or a stream value, so it wakes the matching waiters of all of them at once — the
in-process stand-in for the PostgreSQL backend's NOTIFY. (Two executors in one process, or
an executor and a client, then never wait for a poll to see each other.)

Files are matched by their resolved path; a ``:memory:`` database is private to its
connection, so it has no peers.
"""

from __future__ import annotations

import os
import weakref

from dbos_trio._sysdb.wakeups import WakeupRegistry

_BY_FILE: dict[str, weakref.WeakSet[WakeupRegistry]] = {}


class Peers:
    """This backend's registry, and those of the other backends open on the same file."""

    def __init__(self, path: str | None, own: WakeupRegistry) -> None:
        self._own = own
        self._file = None if path is None else os.path.realpath(path)
        if self._file is not None:
            _BY_FILE.setdefault(self._file, weakref.WeakSet()).add(own)

    def wake(self, key: str) -> None:
        """A write under ``key`` committed: wake its waiters here and in every peer."""
        if self._file is None:
            self._own.wake(key)
            return
        for registry in list(_BY_FILE.get(self._file, ())):
            registry.wake(key)

    def leave(self) -> None:
        """Stop waking and being woken (the backend closed). Idempotent."""
        if self._file is None:
            return
        registries = _BY_FILE.get(self._file)
        if registries is not None:
            registries.discard(self._own)
            if not registries:
                del _BY_FILE[self._file]
        self._file = None
