"""The payload store's garbage collector: mark and sweep.

Invariant: an entry is removed only if no row of the schema references it and it has not
been written or marked used for ``grace_seconds``. Why this is safe without a lock:

* the candidates (entries unused since the cutoff) are listed *before* the references are
  read, so an entry first written during the run is never a candidate;
* a value is put in the store (renewing its entry) before its row is written, so a row
  committed after the mark read references an entry that was renewed after the cutoff:
  the store's delete re-checks each entry's time after renaming it aside
  (:meth:`~dbos_trio.PayloadStore.delete` with ``unused_before``) and puts it back;
* the grace period covers a writer between its put and its commit, which takes far less
  than the default hour (statement and idle-in-transaction timeouts bound it).

References are read from every application's rows: a store may be shared. The store's
calls are synchronous filesystem work, so they run in a worker thread.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import attrs
import trio

from dbos_trio._core.payload_refs import parse_reference
from dbos_trio._payload_store import unused_cutoff

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime
    from dbos_trio._payload_store import PayloadStore

logger = logging.getLogger("dbos_trio.retention")

DEFAULT_PAYLOAD_GRACE_SECONDS = 3600.0
"""How long an unreferenced entry is kept after it was last written or marked used."""
REFERENCE_BATCH = 10_000
"""Distinct references one mark read returns."""


@attrs.frozen
class PayloadCollection:
    """What one payload collection did: entries ``referenced`` by rows, ``candidates``
    (unused for the grace period) and ``removed`` (candidates no row referenced)."""

    referenced: int
    candidates: int
    removed: int


async def referenced_hashes(runtime: Runtime, batch_size: int = REFERENCE_BATCH) -> set[str]:
    """The sha256 of every payload store reference held by a row of the schema, read in
    batches of ``batch_size`` (malformed references are logged and skipped). A database
    failure raises; cancellation stops between batches."""
    hashes: set[str] = set()
    after = ""
    while True:
        batch = await runtime.sysdb.payload_references(after, batch_size)
        for text in batch:
            try:
                hashes.add(parse_reference(text).sha256)
            except ValueError as malformed:
                logger.warning("payload collection: %s (skipped)", malformed)
        if len(batch) < batch_size:
            return hashes
        after = batch[-1]


async def collect_payloads(
    runtime: Runtime,
    store: PayloadStore,
    *,
    grace_seconds: float = DEFAULT_PAYLOAD_GRACE_SECONDS,
    batch_size: int = REFERENCE_BATCH,
) -> PayloadCollection:
    """Remove the entries of ``store`` no row references that have not been used for
    ``grace_seconds`` (wall-clock time: the filesystem's). A database failure raises
    before anything is removed; a store failure raises (what was removed stays removed).
    Cancellation: the worker thread's current call finishes, nothing after it runs."""
    cutoff = unused_cutoff(grace_seconds)
    candidates = set(await trio.to_thread.run_sync(lambda: list(store.unused_since(cutoff))))
    referenced = await referenced_hashes(runtime, batch_size) if candidates else set()
    doomed = sorted(candidates - referenced)
    removed = 0
    if doomed:
        removed = await trio.to_thread.run_sync(lambda: store.delete(doomed, unused_before=cutoff))
        logger.info(
            "payload collection removed %d unreferenced entries from %s", removed, store.where()
        )
    return PayloadCollection(len(referenced), len(candidates), removed)
