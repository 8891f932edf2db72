"""Payload stores: where values over ``Config.payload_store_threshold`` live, once each.

Invariant: an entry is named by the sha256 of its bytes and is either absent or whole —
a reader never sees a partly written file (written to a temporary file, flushed, then
renamed over the name), and two writers of the same value write the same bytes under the
same name (so a value shared by many rows is stored once). An entry is never rewritten
with other content; :meth:`PayloadStore.put` of an existing entry only marks it as just
used, so that the garbage collector's grace period (``collect_payloads``) also protects
an old entry that a row not yet committed has just started to reference.

The row keeps a reference (:mod:`dbos_trio._core.payload_refs`); the codec
(:mod:`dbos_trio._serialization`) stores on encode, before the row is written, and
resolves on decode, on every read path.

The interface is synchronous. dbos_trio calls ``put`` and ``get`` from a worker thread
(``trio.to_thread.run_sync``, :mod:`dbos_trio._payload_io`) on every path that can wait —
workflow inputs, outputs, step outputs, messages, events and stream values, their reads
and the faces' — so a write and its ``fsync`` never stall the other workflows of the
process; a few paths still call them on the Trio thread (recovery's and the queues' reads
of inputs, enqueues by a client). So an implementation must be safe to call from several
threads at once, and should answer quickly; one over an object store should keep a local
cache in front of it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from dbos_trio.errors import DBOSConfigError, PayloadStoreError

_HEX = frozenset("0123456789abcdef")


@runtime_checkable
class PayloadStore(Protocol):
    """Holds serialized values by their sha256 (lowercase hex).

    Every method is synchronous; ``put`` and ``get`` are mostly called from worker threads,
    concurrently (the module docs say which paths), so an implementation must be
    thread-safe. An error raised reaches the caller as :class:`~dbos_trio.DBOSPayloadError`
    naming the hash and :meth:`where`. Cancellation never interrupts a call: a cancelled
    writer waits for its ``put`` to return (so the entry is whole or absent before the
    cancellation is raised), a cancelled reader stops waiting and its ``get``'s result is
    dropped."""

    def put(self, sha256: str, data: bytes) -> None:
        """Store ``data`` under ``sha256`` (its hash), atomically; if the entry exists,
        leave its content and mark it as just used (the collector's grace period)."""
        ...

    def get(self, sha256: str) -> bytes:
        """The bytes stored under ``sha256``; raise (any exception) if the entry is missing
        or its content does not hash to ``sha256``."""
        ...

    def delete(self, hashes: Iterable[str], *, unused_before: float | None = None) -> int:
        """Remove these entries (absent ones are skipped); the number removed. With
        ``unused_before`` (a Unix time), only those not written or marked used since: an
        entry a writer renews while it is being deleted must survive (or be rewritten)."""
        ...

    def unused_since(self, before: float) -> Iterator[str]:
        """The hashes of entries last written or marked used before ``before`` (a Unix
        time): the candidates the garbage collector may remove if no row references them."""
        ...

    def where(self) -> str:
        """Where the store is, for messages (a directory, a bucket)."""
        ...


def unused_cutoff(grace_seconds: float) -> float:
    """The time (epoch seconds, the filesystem's wall clock, as entries' use times are)
    before which an entry has been unused for ``grace_seconds``. Read here, with the store,
    not in the engine: the engine's time is its own clock, but use times are the files'."""
    return time.time() - grace_seconds


def _checked(sha256: str) -> str:
    if len(sha256) != 64 or not set(sha256) <= _HEX:
        raise PayloadStoreError(f"{sha256[:80]!r} is not a sha256 in lowercase hex")
    return sha256


class DirectoryPayloadStore:
    """A payload store in a filesystem directory: ``<directory>/<first 2 hex>/<sha256>``.

    Safe for several processes (and hosts, on a shared filesystem with atomic rename) and
    threads sharing one directory: entries are written under a temporary name of their own
    and renamed. dbos_trio calls :meth:`put` and :meth:`get` from worker threads (see the
    module docs); a cancelled caller waits for a :meth:`put` to finish, so a cancellation
    never leaves a partial entry: only a temporary file, removed by the put that failed or,
    after a crash, by the garbage collector (:meth:`unused_since`)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        path = Path(directory)
        if not str(directory):
            raise ValueError("DirectoryPayloadStore needs a directory path")
        path.mkdir(parents=True, exist_ok=True)  # raises OSError naming it if it cannot
        if not path.is_dir():
            raise ValueError(f"DirectoryPayloadStore: {path} is not a directory")
        self.directory = path

    def __repr__(self) -> str:
        return f"DirectoryPayloadStore({str(self.directory)!r})"

    def where(self) -> str:
        """``directory <path>``."""
        return f"directory {self.directory}"

    def path_of(self, sha256: str) -> Path:
        """The file an entry lives in."""
        return self.directory / sha256[:2] / _checked(sha256)

    def put(self, sha256: str, data: bytes) -> None:
        """Write ``data`` to a temporary file in the entry's folder, flush it to disk and
        rename it over the entry's name; an existing entry only has its time renewed.

        The entry is never visible partly written: a failure (disk full) removes the
        temporary file and raises :class:`~dbos_trio.PayloadStoreError` naming the hash and
        the file, leaving no entry; a crash leaves at most the temporary file. Cancellation
        cannot interrupt it (synchronous): dbos_trio waits for it to return."""
        target = self.path_of(sha256)
        try:
            os.utime(target)  # already there: the same bytes; renew it for the grace period
            return
        except FileNotFoundError:
            pass
        target.parent.mkdir(exist_ok=True)
        temporary = target.parent / f".{sha256}.{secrets.token_hex(6)}.tmp"
        try:
            with open(temporary, "xb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except OSError as error:
            temporary.unlink(missing_ok=True)
            raise PayloadStoreError(
                f"cannot write payload {sha256} to {target}: {error}"
            ) from error

    def get(self, sha256: str) -> bytes:
        """The entry's bytes, checked against its hash; a missing or corrupt entry raises
        :class:`~dbos_trio.PayloadStoreError` naming the hash and the file. It changes
        nothing, so a cancelled reader may abandon it (dbos_trio does)."""
        target = self.path_of(sha256)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise PayloadStoreError(f"payload {sha256} is missing: no file {target}") from None
        except OSError as error:
            raise PayloadStoreError(
                f"cannot read payload {sha256} from {target}: {error}"
            ) from error
        if hashlib.sha256(data).hexdigest() != sha256:
            raise PayloadStoreError(
                f"payload {sha256} is corrupt: the content of {target} does not hash to its name"
            )
        return data

    def head(self, sha256: str, size: int) -> bytes:
        """The first ``size`` bytes of the entry, for a preview: not checked against the
        hash (that needs the whole), so a corrupt entry previews as what it holds; a missing
        one raises :class:`~dbos_trio.PayloadStoreError` naming the hash and the file. An
        optional capability (not in :class:`PayloadStore`): the faces use it, when a store
        has it, to show a large stored value without reading it whole."""
        target = self.path_of(sha256)
        try:
            with open(target, "rb") as file:
                return file.read(size)
        except FileNotFoundError:
            raise PayloadStoreError(f"payload {sha256} is missing: no file {target}") from None
        except OSError as error:
            raise PayloadStoreError(
                f"cannot read payload {sha256} from {target}: {error}"
            ) from error

    def delete(self, hashes: Iterable[str], *, unused_before: float | None = None) -> int:
        """Unlink each entry's file; absent ones are skipped. With ``unused_before``, the
        file is first renamed aside, then its time checked: a :meth:`put` that renewed it
        before the rename is seen (the file is put back), and one after finds no file and
        writes it anew, so an entry being referenced again is never lost."""
        removed = 0
        for sha256 in hashes:
            target = self.path_of(sha256)
            if unused_before is None:
                try:
                    target.unlink()
                    removed += 1
                except FileNotFoundError:
                    pass
                continue
            aside = target.parent / f".{sha256}.{secrets.token_hex(6)}.deleting"
            try:
                os.rename(target, aside)
            except FileNotFoundError:
                continue
            if aside.stat().st_mtime >= unused_before:
                os.replace(aside, target)  # renewed meanwhile: in use again (same bytes)
                continue
            aside.unlink()
            removed += 1
        return removed

    def unused_since(self, before: float) -> Iterator[str]:
        """Entries whose file was last modified before ``before``, and leftover temporary
        files of interrupted writes that old (removed here: nothing references them)."""
        for folder in sorted(self.directory.iterdir()):
            if not folder.is_dir() or len(folder.name) != 2:
                continue
            for entry in folder.iterdir():
                try:
                    modified = entry.stat().st_mtime
                except FileNotFoundError:
                    continue  # removed meanwhile
                if modified >= before:
                    continue
                if entry.name.endswith((".tmp", ".deleting")):
                    entry.unlink(missing_ok=True)
                elif len(entry.name) == 64 and set(entry.name) <= _HEX:
                    yield entry.name


# The smallest threshold: a reference is about 90 bytes, so a smaller value gains nothing.
MIN_PAYLOAD_STORE_THRESHOLD = 1024


def require_payload_store(
    store: object, threshold: object, max_value_bytes: int | None, where: str
) -> None:
    """Refuse (:class:`~dbos_trio.DBOSConfigError` naming the setting) a store that lacks
    the interface, a threshold that is not a number of bytes of at least
    :data:`MIN_PAYLOAD_STORE_THRESHOLD`, or one no value under the size limit could pass."""
    if store is not None and not isinstance(store, PayloadStore):
        raise DBOSConfigError(
            f"{where}payload_store: {store!r} must implement put, get, delete, unused_since "
            "and where (dbos_trio.PayloadStore), e.g. DirectoryPayloadStore('/path')"
        )
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int)
        or threshold < MIN_PAYLOAD_STORE_THRESHOLD
    ):
        raise DBOSConfigError(
            f"{where}payload_store_threshold: {threshold!r} must be a number of bytes of at "
            f"least {MIN_PAYLOAD_STORE_THRESHOLD}"
        )
    if store is not None and max_value_bytes is not None and threshold >= max_value_bytes:
        raise DBOSConfigError(
            f"{where}payload_store_threshold: {threshold!r} is not under max_value_bytes "
            f"({max_value_bytes!r}): no value could ever be put in the payload store"
        )
