"""``dbos-trio check``: would the application's current code replay the recorded work?

Imports the application (``--app module:attribute``, its ``DBOS`` instance, never
launched), reads the selected workflows from a system database (read-only) or from
exported bundles (``--bundle``, no database), replays each in the sandbox and prints a
table (``--json``: the report). Exit status 0 when every in-flight workflow replays, 1
when one would diverge (the failing ones named on stderr), 2 for a bad ``--app``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any

from dbos_trio._core.filters import epoch_ms
from dbos_trio._core.replay import CheckReport
from dbos_trio._ops import bundles as bundle_ops
from dbos_trio._ops import check as ops
from dbos_trio._ops.check import CheckSelection, RecordedHistory, ReplayApp
from dbos_trio.cli._common import configured_url, count, open_client
from dbos_trio.cli._errors import UsageError
from dbos_trio.errors import DBOSException


class CheckFailed(DBOSException):
    """Some in-flight workflow would not replay against the new code (exit status 1)."""


def add_parsers(commands: Any, common: argparse.ArgumentParser, **layout: Any) -> None:
    """Add ``check`` to ``commands``."""
    text = (
        "Replay recorded workflows against the application's current code, in a sandbox "
        "(nothing is written, no step runs, time is virtual), and say for each whether the "
        "new code makes the same durable calls. Fails (exit 1) when an in-flight workflow "
        "(PENDING, ENQUEUED, DELAYED) would diverge."
    )
    check = commands.add_parser("check", parents=[common], help=text, description=text, **layout)
    check.add_argument(
        "--app",
        required=True,
        help="the application: module:attribute naming its DBOS instance (not launched), "
        "imported with the current directory on the path",
    )
    check.add_argument(
        "--bundle",
        action="append",
        default=[],
        metavar="FILE",
        help="replay every workflow of this exported bundle (repeatable; no database "
        "needed; the filters below select from the database only)",
    )
    check.add_argument(
        "--finished",
        type=count,
        default=0,
        metavar="N",
        help="also replay the N most recent finished (SUCCESS/ERROR) workflows",
    )
    check.add_argument("--workflow-id", action="append", default=None, help="exactly these ids")
    check.add_argument("--name", "-n", action="append", default=None, help="workflow name")
    check.add_argument("--queue", "-q", action="append", default=None, help="queue name")
    check.add_argument("--version", "-v", action="append", default=None, help="application version")
    check.add_argument(
        "--created-after", type=epoch_ms, default=None, help="created at or after (ISO 8601)"
    )
    check.set_defaults(run=_check)


def load_app(spec: str) -> ReplayApp:
    """The ``DBOS`` instance named by ``module:attribute``, as a replay needs it."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"--app {spec!r}: expected module:attribute, e.g. myapp.main:dbos")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as missing:
        raise UsageError(f"--app {spec!r}: cannot import {module_name}: {missing}") from missing
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UsageError(f"--app {spec!r}: {module_name} has no attribute {attribute}")
        target = getattr(target, part)
    from dbos_trio._dbos import DBOS

    if not isinstance(target, DBOS):
        raise UsageError(f"--app {spec!r} is a {type(target).__name__}, not a DBOS instance")
    return ReplayApp(config=target._config, registry=target._registry, slot=target._slot)


async def _check(args: argparse.Namespace) -> None:
    app = load_app(args.app)
    histories: list[RecordedHistory] = []
    for path in args.bundle:
        histories += bundle_ops.bundle_histories(bundle_ops.read_bundle_file(path))
    url = configured_url(args)
    if url or not args.bundle:
        if not url:
            raise UsageError("no database: pass --database-url (or --bundle FILE)")
        selection = CheckSelection(
            workflow_ids=None if args.workflow_id is None else tuple(args.workflow_id),
            names=None if args.name is None else tuple(args.name),
            queues=None if args.queue is None else tuple(args.queue),
            versions=None if args.version is None else tuple(args.version),
            created_after_ms=args.created_after,
            finished=args.finished,
            application_name=app.config.app_name,
        )
        client = open_client(args, allow_pickle=False)
        async with client:
            histories += await ops.load_histories(client._reach, selection)
    report = await ops.check(app, histories)
    _show(report, as_json=args.json)
    if not report.ok:
        failing = ", ".join(result.workflow_id for result in report.failing)
        raise CheckFailed(
            f"{len(report.failing)} in-flight workflow(s) would not replay: {failing}; "
            "put the change behind dbos.patch() or release it as a new application version"
        )


def _show(report: CheckReport, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.summary())
