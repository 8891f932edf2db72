"""The codec's access to its payload store, with the store's I/O off the Trio thread.

A store call is file I/O — a put writes, flushes to disk (``fsync``) and renames; a get reads
megabytes and hashes them — and the store interface is synchronous
(:class:`~dbos_trio.PayloadStore`). Run on the Trio thread, one large put stalls every other
workflow of the process for as long as the disk takes. So on the paths that can wait, the
calls run in a worker thread (``trio.to_thread.run_sync``):

* **Writes are split in two.** Encoding (synchronous, at the call, so a bad or too large
  value is refused before anything is written) hashes the text and returns an
  :class:`Unsettled` reference holding the bytes; the write path then ``await``\\ s
  :meth:`PayloadIO.settle`, which puts the entry in a thread, before the row that references
  it is written. Invariant: a row never references an entry that is not whole in the store.
  A put is **not abandoned on cancellation**: a cancelled caller waits for its thread, so
  the entry is then either whole or absent (a failed put removes its temporary file), and
  the cancellation is raised at the caller's next checkpoint, before the row is written; the
  unreferenced entry is removed by the garbage collector after its grace period.
* **Reads are fetched ahead.** A read path ``await``\\ s :meth:`PayloadIO.prefetch` of the
  references it is about to decode: each entry is read in a thread (abandoned on
  cancellation: a read changes nothing) into a small cache, from which the synchronous
  decode then takes it. An entry is immutable (named by its hash), so a cached entry is
  never stale. A read that fails is not cached: the decode reads again and raises the error
  naming the hash and the store.

Paths not converted (or a store used without an ``await`` in reach) still call the store
synchronously: :meth:`PayloadIO.store_text` without ``defer``, and :meth:`PayloadIO.resolve`
on a cache miss. So does everything under an autojumping ``trio.testing.MockClock``
(virtual-time tests): a task waiting for a thread counts as idle there, and virtual time
would run ahead of the I/O (timeouts firing while a value is being written). Either way
the value read or written is the same.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

import trio

from dbos_trio._clock import autojumping
from dbos_trio._core.payload_refs import looks_like_reference, parse_reference, reference_for
from dbos_trio.errors import DBOSPayloadError

if TYPE_CHECKING:
    from dbos_trio._payload_store import PayloadStore

# Bytes of prefetched entries kept for the decodes that follow (least recently fetched
# dropped first). A value over it still decodes: once evicted, it is read again, in place.
PREFETCH_CACHE_BYTES = 64 * 1024 * 1024


class Unsettled(str):
    """A payload store reference (the text a row will hold) whose entry is not in the store
    yet: ``data`` is the entry's bytes, for :meth:`PayloadIO.settle` to put. A plain
    ``str`` otherwise; settling returns the plain text to write."""

    sha256: str
    data: bytes
    what: str

    def __new__(cls, text: str, sha256: str, data: bytes, what: str) -> Unsettled:
        made = super().__new__(cls, text)
        made.sha256, made.data, made.what = sha256, data, what
        return made


class PayloadIO:
    """Puts and gets of one codec's store (None: no store; every call is then a no-op)."""

    def __init__(self, store: PayloadStore | None, threshold: int) -> None:
        self.store = store
        self.threshold = threshold
        self._fetched: OrderedDict[str, bytes] = OrderedDict()
        self._fetched_bytes = 0

    # --- writes ------------------------------------------------------------------------

    def store_text(self, text: str, what: str, *, defer: bool = False) -> str:
        """The text a row holds for ``text``: itself, or — over the threshold, with a store —
        its reference, the entry put now (on this thread) or, with ``defer``, left for
        :meth:`settle` (an :class:`Unsettled`). A put that fails raises
        :class:`~dbos_trio.DBOSPayloadError` naming the hash and the store."""
        store = self.store
        if store is None or len(text) <= self.threshold:
            return text
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= self.threshold:
            return text
        ref = reference_for(data)
        if defer:
            return Unsettled(ref.text(), ref.sha256, data, what)
        try:
            store.put(ref.sha256, data)
        except Exception as failed:
            raise _put_error(what, ref.sha256, store, failed) from failed
        return ref.text()

    async def settle(self, text: str | None) -> str | None:
        """``text`` ready to be written: an :class:`Unsettled` reference once its entry is
        whole in the store (put in a worker thread), as plain text; anything else as it is.

        Cancellation waits for the put (it is not abandoned), so the entry is whole or
        absent, then is raised at the caller's next checkpoint. A failed put raises
        :class:`~dbos_trio.DBOSPayloadError` naming the hash and the store; nothing is left
        under the entry's name."""
        if not isinstance(text, Unsettled):
            return text
        store = self.store
        assert store is not None  # an Unsettled is only made for a store
        try:
            if autojumping():
                store.put(text.sha256, text.data)  # see the module docs: virtual time
            else:
                await trio.to_thread.run_sync(store.put, text.sha256, text.data)
        except Exception as failed:
            raise _put_error(text.what, text.sha256, store, failed) from failed
        return str(text)

    # --- reads -------------------------------------------------------------------------

    async def prefetch(self, *texts: str | None) -> None:
        """Read the entries these payloads reference (the others are skipped) in a worker
        thread, for the decodes that follow. Never raises for a bad entry (the decode does,
        naming it); cancellation abandons the read at once (it changes nothing)."""
        store = self.store
        if store is None or autojumping():  # virtual time: the decode reads, on this thread
            return
        for text in texts:
            if not looks_like_reference(text):
                continue
            assert text is not None
            try:
                sha256 = parse_reference(text).sha256
            except ValueError:
                continue  # the decode refuses it, saying why
            if sha256 in self._fetched:
                self._fetched.move_to_end(sha256)
                continue
            try:
                data = await trio.to_thread.run_sync(store.get, sha256, abandon_on_cancel=True)
            except Exception:
                continue  # read again by the decode, which raises naming hash and store
            self._keep(sha256, data)

    async def head_of(self, text: str | None, over: int, chars: int) -> tuple[str, int] | None:
        """For a reference to an entry of more than ``over`` bytes, in a store that can read
        part of one (a ``head(sha256, size)`` method, as
        :class:`~dbos_trio.DirectoryPayloadStore` has): its first ``chars`` characters and
        its size, read in a worker thread without reading the rest. None otherwise, or if
        the read fails (the caller then reads the entry whole, which names the error).
        Cancellation abandons the read (it changes nothing)."""
        head = getattr(self.store, "head", None)
        if head is None or not looks_like_reference(text):
            return None
        assert text is not None
        try:
            ref = parse_reference(text)
        except ValueError:
            return None
        if ref.size <= over:
            return None
        try:
            if autojumping():
                data = head(ref.sha256, 4 * chars)
            else:
                data = await trio.to_thread.run_sync(
                    head, ref.sha256, 4 * chars, abandon_on_cancel=True
                )
        except Exception:
            return None
        if not isinstance(data, bytes):
            return None
        return data.decode("utf-8", "replace")[:chars], ref.size

    def resolve(self, text: str, fmt: str | None, what: str = "a payload") -> str:
        """The stored text itself: ``text``, or, if it is a payload store reference, the
        text the store holds for it (prefetched, or read now on this thread);
        :class:`~dbos_trio.DBOSPayloadError` naming the hash and the store if it has no
        such entry, a corrupt one, or this process has no store."""
        if not looks_like_reference(text):
            return text
        try:
            ref = parse_reference(text)
        except ValueError as malformed:
            raise DBOSPayloadError(what, fmt, malformed) from malformed
        store = self.store
        if store is None:
            raise DBOSPayloadError(
                what,
                fmt,
                f"stored in the payload store: sha256 {ref.sha256}, {ref.size:,} bytes; this "
                "process has no payload store configured (Config.payload_store, Client "
                "payload_store, or the CLI's --payload-store)",
            )
        data = self._fetched.get(ref.sha256)
        if data is None:
            try:
                data = store.get(ref.sha256)
            except Exception as failed:
                raise DBOSPayloadError(
                    what, fmt, f"payload sha256 {ref.sha256} in {store.where()}: {failed}"
                ) from failed
        return data.decode("utf-8", "surrogatepass")

    def _keep(self, sha256: str, data: bytes) -> None:
        self._fetched[sha256] = data
        self._fetched_bytes += len(data)
        while self._fetched_bytes > PREFETCH_CACHE_BYTES and len(self._fetched) > 1:
            _, dropped = self._fetched.popitem(last=False)
            self._fetched_bytes -= len(dropped)


def _put_error(what: str, sha256: str, store: PayloadStore, failed: Exception) -> DBOSPayloadError:
    return DBOSPayloadError(what, None, f"cannot put payload {sha256} in {store.where()}: {failed}")
