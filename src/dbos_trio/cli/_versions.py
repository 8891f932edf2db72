"""``dbos-trio version list|set-latest``, ``dbos-trio workflow recover --executor ID``,
``dbos-trio doctor`` and ``dbos-trio rename-application``: upgrades and stranded work from
the command line.

Kept apart from :mod:`dbos_trio.cli._main`: :func:`add_parsers` adds ``version`` and ``doctor``
to its subparsers, :func:`add_workflow_actions` adds ``recover`` to ``workflow``'s. Each
action opens a :class:`~dbos_trio.Client` (which never migrates) on the database named by
``--database-url`` or the environment, acting for ``--application-name``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import attrs

from dbos_trio._client import Client
from dbos_trio._config import DEFAULT_HEARTBEAT_INTERVAL
from dbos_trio._ops import versions as ops
from dbos_trio.cli._common import open_client
from dbos_trio.cli._errors import UsageError
from dbos_trio.cli._format import when

CLI_RETRY_LIMIT_SECONDS = 10.0


def _application_option(parser: argparse.ArgumentParser, *, help_text: str) -> None:
    parser.add_argument("--application-name", "-a", default=None, help=help_text)


def _heartbeat_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--heartbeat-interval",
        type=float,
        default=DEFAULT_HEARTBEAT_INTERVAL,
        help="the executors' Config.heartbeat_interval: rows stamped within three of it "
        f"count as running (default {DEFAULT_HEARTBEAT_INTERVAL:g} s)",
    )


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``version`` (``list``, ``set-latest``), ``doctor`` and ``rename-application``
    to ``commands``."""
    version = commands.add_parser(
        "version",
        help="application versions",
        description="List the application versions of the system database, or make one the latest.",
    )
    actions = version.add_subparsers(dest="version_action", required=True)
    listing = actions.add_parser(
        "list",
        parents=[common],
        help="list versions, newest first",
        description="List the registered application versions, newest first.",
    )
    _application_option(listing, help_text="this application's and unclaimed ones (default: all)")
    listing.set_defaults(run=_version_list)
    latest = actions.add_parser(
        "set-latest",
        parents=[common],
        help="make a version the latest (promote or roll back)",
        description="Make a registered version the latest of its application: the version "
        "new and recovered work prefers (promote a new release, or roll back).",
    )
    latest.add_argument("version", help="the version name to make the latest")
    _application_option(latest, help_text="the application acting (required)")
    latest.set_defaults(run=_version_set_latest)
    check = commands.add_parser(
        "doctor",
        parents=[common],
        help="list stranded work (and how to free it)",
        description="List work no live executor will run: PENDING rows of silent executors, "
        "rows pinned to versions nobody runs, and workflow names nobody registers; each "
        "with the command that frees it.",
    )
    _application_option(check, help_text="one application (and unclaimed rows); default: all")
    _heartbeat_option(check)
    check.set_defaults(run=_doctor)
    renaming = commands.add_parser(
        "rename-application",
        parents=[common],
        help="re-own an application's rows under a new name (stop it first)",
        description="Re-own an application's queues, schedules, versions and workflows under "
        "a new name, in batches with progress on stderr. Stop the application's executors "
        "first.",
    )
    renaming.add_argument("--from", "-f", dest="old_name", default=None, help="the old name")
    renaming.add_argument("--to", "-t", dest="new_name", required=True, help="the new name")
    renaming.add_argument(
        "--adopt-unclaimed-rows", action="store_true", help="also re-own unclaimed rows"
    )
    renaming.add_argument(
        "--batch-size", type=int, default=ops.DEFAULT_BATCH_SIZE, help="workflows per batch"
    )
    renaming.set_defaults(run=_rename_application, application_name=None)


def add_workflow_actions(actions: Any, common: argparse.ArgumentParser) -> None:
    """Add ``recover --executor ID`` to the ``workflow`` command's ``actions``."""
    recover = actions.add_parser(
        "recover",
        parents=[common],
        help="re-enqueue a dead executor's PENDING workflows",
        description="Re-enqueue the PENDING workflows of an executor that is gone, so any "
        "live executor of the application runs them; rows its owner stamped recently "
        "are left alone, so nothing runs twice.",
    )
    recover.add_argument("--executor", "-e", required=True, help="the executor id")
    recover.add_argument(
        "--application-version", "-v", default=None, help="only this version (default: all)"
    )
    _application_option(recover, help_text="the application whose rows move (required)")
    _heartbeat_option(recover)
    recover.set_defaults(run=_workflow_recover)


def _client(args: argparse.Namespace) -> Client:
    return open_client(args, app_name=args.application_name, allow_pickle=False)


def _table(headers: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells)
    return "\n".join(lines)


def _require_application(args: argparse.Namespace, command: str) -> None:
    if not args.application_name:
        raise UsageError(f"{command} acts for one application: pass --application-name")


async def _version_list(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        found = await client.list_application_versions()
    if args.json:
        print(json.dumps([attrs.asdict(v) for v in found], indent=2))
        return
    print(
        _table(
            ("version", "latest", "application", "stamped", "created"),
            [
                (
                    v.version_name,
                    "*" if index == 0 and args.application_name else "",
                    v.application_name or "(unclaimed)",
                    when(v.version_timestamp),
                    when(v.created_at),
                )
                for index, v in enumerate(found)
            ],
        )
    )


async def _version_set_latest(args: argparse.Namespace) -> None:
    _require_application(args, "version set-latest")
    async with _client(args) as client:
        await client.set_latest_application_version(args.version)
        latest = await client.get_latest_application_version()
    if args.json:
        print(json.dumps({"latest": latest.version_name}))
    else:
        print(f"{latest.version_name} is now the latest version of {args.application_name}")


async def _workflow_recover(args: argparse.Namespace) -> None:
    _require_application(args, "workflow recover")
    async with _client(args) as client:
        moved = await client.recover_executor(
            args.executor,
            application_version=args.application_version,
            heartbeat_interval=args.heartbeat_interval,
        )
        left = [
            c
            for c in await client.active_workflow_counts()
            if c.status == "PENDING" and c.executor_id == args.executor
        ]
    still = sum(c.count for c in left)
    if args.json:
        print(json.dumps({"recovered": moved, "left_running": still}))
        return
    print(f"re-enqueued {len(moved)} workflow(s) of executor {args.executor}")
    for workflow_id in moved:
        print(f"  {workflow_id}")
    if still:
        print(
            f"{still} PENDING workflow(s) of {args.executor} were stamped within the last "
            f"{ops.window_ms(args.heartbeat_interval) / 1000:g} s and left to it: it "
            "looks alive"
        )


async def _doctor(args: argparse.Namespace) -> None:
    async with _client(args) as client:
        diagnosis = await ops.diagnose(
            client._reach,
            application_name=args.application_name,
            heartbeat_interval=args.heartbeat_interval,
        )
    if args.json:
        print(json.dumps(attrs.asdict(diagnosis), indent=2))
        return
    scope = args.application_name or "every application"
    print(f"latest version ({scope}): {diagnosis.latest_version or '(none registered)'}")
    if not diagnosis.findings:
        print("no stranded work found")
        return
    print(
        _table(
            ("kind", "subject", "count", "detail"),
            [(f.kind, f.subject, f.count, f.detail) for f in diagnosis.findings],
        )
    )
    print("\nfixes:")
    for f in diagnosis.findings:
        print(f"  {f.subject}: {f.fix}")


async def _rename_application(args: argparse.Namespace) -> None:
    def progress(what: str, moved: int) -> None:
        if not args.json:
            print(f"  {what}: {moved} re-owned", flush=True)

    ops.check_rename(
        args.old_name,
        args.new_name,
        adopt_unclaimed_rows=args.adopt_unclaimed_rows,
        batch_size=args.batch_size,
    )
    async with _client(args) as client:
        counts = await client.rename_application(
            args.old_name,
            args.new_name,
            batch_size=args.batch_size,
            adopt_unclaimed_rows=args.adopt_unclaimed_rows,
            progress=progress,
        )
    if args.json:
        print(json.dumps(attrs.asdict(counts)))
        return
    print(
        f"renamed {args.old_name or '(unclaimed rows)'} to {args.new_name}: "
        + ", ".join(f"{n} {table}" for table, n in attrs.asdict(counts).items())
    )
