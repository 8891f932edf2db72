"""``dbos-trio gc`` and ``dbos-trio cancel-before``: retention from the command line.

``gc`` deletes finished workflows (SUCCESS, ERROR, CANCELLED,
MAX_RECOVERY_ATTEMPTS_EXCEEDED) that finished more than ``--older-than`` seconds ago or
before ``--completed-before``, and/or all but the ``--keep-newest`` newest, in batches
(:mod:`dbos_trio._ops.retention`, the operation ``DBOS`` and ``Client`` call too);
PENDING, ENQUEUED and DELAYED ones are never touched. Progress goes to stderr (at most one
line a second), the summary to stdout.
``cancel-before`` cancels every active workflow created before a time (the official 2.x
``global_timeout``). Both act on ``--application-name``'s rows and unclaimed ones, or on
every row of the schema without it. Interrupted (Ctrl-C), ``gc`` stops between batches:
what was deleted stays deleted, and running it again continues. With ``--payload-store``,
``gc`` then removes the store's entries no row references any more (unused for
``--payload-grace`` seconds: :mod:`dbos_trio._engine.admin.payloads`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import trio

from dbos_trio._client import Client
from dbos_trio._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV
from dbos_trio._core.filters import epoch_ms
from dbos_trio._core.retention import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, MAX_JOBS
from dbos_trio._ops import retention
from dbos_trio._ops.retention import (
    DEFAULT_PAYLOAD_GRACE_SECONDS,
    GarbageCollection,
    PayloadCollection,
)
from dbos_trio.cli._common import payload_store_of
from dbos_trio.cli._errors import CLI_RETRY_LIMIT_SECONDS, UsageError

# A progress line at most this often (Trio clock): a million rows are 500 batches.
PROGRESS_EVERY_SECONDS = 1.0


def _whole(text: str, low: int, high: int | None = None) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"{low} or more"
        raise argparse.ArgumentTypeError(f"{text!r} must be {bound}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of seconds")
    return value


def _seconds_or_zero(text: str) -> float:
    return 0.0 if text.strip() in ("0", "0.0") else _seconds(text)


def _time(text: str) -> int:
    try:
        return epoch_ms(text, "time")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time such as 2026-01-31T08:00:00Z"
        ) from None


def add_parsers(commands: Any, common: argparse.ArgumentParser, **layout: Any) -> None:
    """Add ``gc`` and ``cancel-before`` to ``commands`` (argparse subparsers); ``common``
    holds the connection options."""
    gc = commands.add_parser(
        "gc",
        parents=[common],
        help="delete finished workflows (retention)",
        description="Delete finished workflows (SUCCESS, ERROR, CANCELLED, dead-lettered) and "
        "every row of theirs, in short batches with progress on stderr; PENDING, ENQUEUED "
        "and DELAYED rows are never touched.",
        **layout,
    )
    cutoff = gc.add_mutually_exclusive_group()
    cutoff.add_argument(
        "--older-than", type=_seconds, default=None, help="seconds since they finished"
    )
    cutoff.add_argument("--completed-before", type=_time, default=None, help="ISO 8601")
    gc.add_argument(
        "--keep-newest", type=lambda t: _whole(t, 0), default=None, help="keep this many"
    )
    gc.add_argument(
        "--batch-size",
        type=lambda t: _whole(t, 1, MAX_BATCH_SIZE),
        default=DEFAULT_BATCH_SIZE,
        help=f"workflows per transaction (default {DEFAULT_BATCH_SIZE})",
    )
    gc.add_argument(
        "--jobs",
        type=lambda t: _whole(t, 1, MAX_JOBS),
        default=1,
        help="batches at a time (PostgreSQL; default 1)",
    )
    gc.add_argument(
        "--application-name",
        "-a",
        default=None,
        help="only this application's (and unclaimed) rows",
    )
    gc.add_argument(
        "--payload-grace",
        type=_seconds_or_zero,
        default=DEFAULT_PAYLOAD_GRACE_SECONDS,
        help="keep unreferenced entries used this recently, in seconds (default "
        f"{DEFAULT_PAYLOAD_GRACE_SECONDS:.0f}): a value written for a row not yet committed",
    )
    gc.set_defaults(run=_gc)
    cancel = commands.add_parser(
        "cancel-before",
        parents=[common],
        help="cancel active workflows created before a time",
        description="Cancel every PENDING, ENQUEUED or DELAYED workflow created before a time "
        "(the official SDK's global timeout), in batches.",
        **layout,
    )
    cancel.add_argument("created_before", type=_time, help="ISO 8601")
    cancel.add_argument(
        "--application-name",
        "-a",
        default=None,
        help="only this application's (and unclaimed) rows",
    )
    cancel.set_defaults(run=_cancel_before)


def _client(args: argparse.Namespace) -> Client:
    url = (
        args.database_url
        or os.environ.get(SYSTEM_DATABASE_URL_ENV)
        or os.environ.get(DATABASE_URL_ENV)
    )
    if not url:
        raise UsageError(f"no database: pass --database-url or set {SYSTEM_DATABASE_URL_ENV}")
    # As every command: give up on an unreachable database rather than wait forever.
    return Client(
        url,
        schema=args.schema,
        app_name=args.application_name,
        use_listen_notify=False,
        database_retry_limit=CLI_RETRY_LIMIT_SECONDS,
        allow_pickle=False,  # nothing here reads a payload
        payload_store=payload_store_of(args),
    )


async def _gc(args: argparse.Namespace) -> None:
    rows = not (
        args.older_than is None and args.completed_before is None and args.keep_newest is None
    )
    if not rows and args.payload_store is None:
        raise UsageError(
            "gc needs --older-than, --completed-before or --keep-newest (or --payload-store)"
        )
    started = trio.current_time()
    last = [started]

    def progress(deleted: int) -> None:
        now = trio.current_time()
        if now - last[0] >= PROGRESS_EVERY_SECONDS:
            last[0] = now
            rate = deleted / max(now - started, 1e-9)
            print(f"deleted {deleted} workflows ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    result = GarbageCollection(0, 0)
    payloads: PayloadCollection | None = None
    async with _client(args) as client:
        if rows:
            cutoff = args.completed_before
            if args.older_than is not None:
                now_ms = client._reach.runtime("gc").clock.now_ms()
                cutoff = max(0, now_ms - round(args.older_than * 1000))
            result = await retention.garbage_collect(
                client._reach,
                completed_before=cutoff,
                keep_newest=args.keep_newest,
                batch_size=args.batch_size,
                progress=progress,
                jobs=args.jobs,
            )
        if args.payload_store is not None:
            payloads = await retention.collect_payloads(
                client._reach, grace_seconds=args.payload_grace
            )
    elapsed = trio.current_time() - started
    if args.json:
        report: dict[str, Any] = {
            "deleted": result.deleted,
            "batches": result.batches,
            "seconds": elapsed,
        }
        if payloads is not None:
            report["payloads_removed"] = payloads.removed
            report["payloads_referenced"] = payloads.referenced
        print(json.dumps(report))
    else:
        print(f"deleted {result.deleted} workflows in {result.batches} batches ({elapsed:.1f} s)")
        if payloads is not None:
            print(
                f"removed {payloads.removed} unreferenced payload store entries "
                f"({payloads.candidates} unused for the grace period, "
                f"{payloads.referenced} referenced)"
            )


async def _cancel_before(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        cutoff = args.created_before
        cancelled = await retention.cancel_workflows_created_before(client._reach, cutoff)
    if args.json:
        print(json.dumps({"cancelled": cancelled}))
    else:
        print(f"cancelled {len(cancelled)} workflows")
