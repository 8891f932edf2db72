"""The payload store entries a workflow bundle carries (bundle version 2).

A bundle copies every payload column as stored, so a row whose value is in a payload store
holds only its reference (``dbos_trio_payload:1:<sha256>:<size>``). Exported with a store,
the bundle also carries each entry those references name, once, content-addressed::

    "payloads": {"<sha256>": "<the entry's bytes, base64>", ...}

and says ``"version": 2``. Imported, the entries are written into the target's store, and
only then its rows into its database.

Invariants, and why:

* **A bundle never imports references without their values by accident.** One that
  carries entries is version 2, which a reader of version 1 only refuses ("upgrade
  dbos-trio"), instead of importing rows that reference nothing; a version 2 bundle
  imported with no store configured is refused, naming the missing store, before
  anything is written. A bundle without entries stays version 1, as before.
* **Every entry is checked before anything is written**: its key is a sha256 in lowercase
  hex, its value base64 whose bytes hash to that key; a bad one raises naming it.
* **Entries before rows**, as every writer of a reference does: a row of the target never
  references an entry its store lacks. An import refused after the entries were written
  (the rows' transaction failing) leaves only unreferenced entries, which the garbage
  collector removes after its grace period.

The store's I/O runs in worker threads (``trio.to_thread.run_sync``): a read abandoned if
its caller is cancelled (it changes nothing), a write waited for (the entry whole or
absent before the cancellation is raised).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import trio

from dbos_trio._core.payload_refs import looks_like_reference, parse_reference
from dbos_trio._payload_store import PayloadStore
from dbos_trio._sysdb.interfaces.bundles import WorkflowRows
from dbos_trio.errors import DBOSException, DBOSPayloadError

# The payload columns of each part of a workflow's rows (status: its legacy columns too).
PAYLOAD_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "status": ("inputs", "output", "error"),
    "input": ("inputs",),
    "output": ("output", "error"),
    "steps": ("output", "error"),
    "events": ("value",),
    "event_history": ("value",),
    "streams": ("value",),
    "notifications": ("message",),
}
_HEX = frozenset("0123456789abcdef")


def references(workflows: Iterable[WorkflowRows]) -> dict[str, str]:
    """Every payload store entry the rows reference: its sha256, and where the first
    reference to it is (``workflow W, steps.output``), for messages. A malformed
    reference is skipped: it is copied as stored and refused when read, as any other."""
    found: dict[str, str] = {}
    for rows in workflows:
        for part, columns in PAYLOAD_COLUMNS.items():
            value = getattr(rows, part)
            for row in value if isinstance(value, list) else [] if value is None else [value]:
                for column in columns:
                    text = row.get(column)
                    if not isinstance(text, str) or not looks_like_reference(text):
                        continue
                    try:
                        sha256 = parse_reference(text).sha256
                    except ValueError:
                        continue
                    found.setdefault(sha256, f"workflow {rows.workflow_id}, {part}.{column}")
    return found


async def embedded(store: PayloadStore, wanted: Mapping[str, str]) -> dict[str, str]:
    """The ``payloads`` section for the entries ``wanted`` (sha256 -> where referenced),
    each read from ``store`` (checked against its hash by the store) in a worker thread.
    An entry the store cannot give raises :class:`~dbos_trio.DBOSPayloadError` naming the
    hash, the row that references it and the store: an export never omits one silently."""
    section: dict[str, str] = {}
    for sha256, where in sorted(wanted.items()):
        try:
            data = await trio.to_thread.run_sync(store.get, sha256, abandon_on_cancel=True)
        except Exception as failed:
            raise DBOSPayloadError(
                f"the payload referenced by {where}",
                None,
                f"cannot export payload {sha256} from {store.where()}: {failed}",
            ) from failed
        section[sha256] = base64.b64encode(data).decode("ascii")
    return section


def parse_payloads(section: Any) -> dict[str, bytes]:
    """The entries of a bundle's ``payloads`` section, each checked: a sha256 key in
    lowercase hex, a base64 value whose bytes hash to it. :class:`~dbos_trio.DBOSException`
    naming the first bad one; nothing is written by a refused bundle."""
    if not isinstance(section, dict):
        raise DBOSException("bundle: 'payloads' must be an object of sha256 -> base64")
    entries: dict[str, bytes] = {}
    for sha256, encoded in section.items():
        where = f"bundle payloads[{str(sha256)[:80]!r}]"
        if not isinstance(sha256, str) or len(sha256) != 64 or not set(sha256) <= _HEX:
            raise DBOSException(f"{where}: the key must be a sha256 in lowercase hex")
        if not isinstance(encoded, str):
            raise DBOSException(f"{where}: the value must be base64 text")
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as broken:
            raise DBOSException(f"{where}: not base64 ({broken})") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise DBOSException(f"{where}: its bytes do not hash to its key (corrupt bundle)")
        entries[sha256] = data
    return entries


def require_store(store: PayloadStore | None, entries: Mapping[str, bytes]) -> PayloadStore:
    """The target's store for a bundle carrying ``entries``; :class:`~dbos_trio.DBOSException`
    naming the missing store if there is none (raised before anything is written)."""
    if store is None:
        raise DBOSException(
            f"the bundle carries {len(entries)} payload store entr"
            f"{'y' if len(entries) == 1 else 'ies'} (its rows reference them) and this "
            "target has no payload store: give it one (the CLI's --payload-store DIR or "
            "$DBOS_TRIO_PAYLOAD_STORE, Client(payload_store=...)); nothing was imported"
        )
    return store


async def put_entries(store: PayloadStore, entries: Mapping[str, bytes]) -> None:
    """Write each entry into ``store``, in a worker thread; an existing one is only renewed
    (same hash, same bytes). A put is waited for on cancellation (whole or absent); one
    that fails raises :class:`~dbos_trio.DBOSPayloadError` naming the hash and the store."""
    for sha256, data in entries.items():
        try:
            await trio.to_thread.run_sync(store.put, sha256, data)
        except Exception as failed:
            raise DBOSPayloadError(
                "a bundled payload",
                None,
                f"cannot put payload {sha256} in {store.where()}: {failed}",
            ) from failed
