"""``dbos-trio dashboard``: serve the web dashboard of a system database until Ctrl-C.

Kept apart from :mod:`dbos_trio.cli._main`: :func:`add_parsers` adds the command. It opens a
:class:`~dbos_trio.Client` (which never migrates) on ``--database-url`` and serves
:mod:`dbos_trio.dashboard` over it on ``--host``/``--port`` (127.0.0.1:8383 by default).
A host that is not loopback needs ``--token`` (or ``DBOS_DASHBOARD_TOKEN``); bad settings
are refused (exit 2) before anything connects or binds; a database unreachable at the
start is exit 4. Once serving, a statement the database does not answer within
``CLI_RETRY_LIMIT_SECONDS`` makes that page a 503; the next request tries again, so the
dashboard outlives a database restart.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import trio

from dbos_trio._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV
from dbos_trio._redact import redact_url
from dbos_trio.cli._common import open_client
from dbos_trio.cli._errors import UsageError
from dbos_trio.dashboard import DEFAULT_HOST, DEFAULT_PORT, DashboardSettings, check_settings, serve
from dbos_trio.errors import DBOSConfigError

TOKEN_ENV = "DBOS_DASHBOARD_TOKEN"


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0..65535")
    return value


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``dashboard`` to ``commands`` (an argparse subparsers object)."""
    dashboard = commands.add_parser(
        "dashboard",
        parents=[common],
        help="serve the web dashboard (Ctrl-C stops it)",
        description="Serve the web dashboard of a system database: workflows, steps, queues, "
        "schedules, executors and versions, with cancel, resume, fork and delete. Bound to "
        "127.0.0.1 unless --host says otherwise (then a token is required).",
    )
    dashboard.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    dashboard.add_argument(
        "--port",
        "-p",
        type=_port,
        default=DEFAULT_PORT,
        help=f"default {DEFAULT_PORT}; 0 picks a free port",
    )
    dashboard.add_argument(
        "--token", default=None, help=f"required unless loopback (or ${TOKEN_ENV})"
    )
    dashboard.add_argument(
        "--read-only", action="store_true", help="show no actions and refuse every POST"
    )
    dashboard.set_defaults(run=run)


def _settings(args: argparse.Namespace) -> DashboardSettings:
    settings = DashboardSettings(
        host=args.host,
        port=args.port,
        token=args.token or os.environ.get(TOKEN_ENV) or None,
        read_only=args.read_only,
        allow_pickle=args.allow_pickle,
    )
    try:
        check_settings(settings)
    except DBOSConfigError as error:
        raise UsageError(str(error)) from None
    return settings


async def run(args: argparse.Namespace) -> None:
    url = (
        args.database_url
        or os.environ.get(SYSTEM_DATABASE_URL_ENV)
        or os.environ.get(DATABASE_URL_ENV)
    )
    if not url:
        raise UsageError(f"no database: pass --database-url or set {SYSTEM_DATABASE_URL_ENV}")
    settings = _settings(args)
    # Bounded like every command's: an outage makes a page fail (503) and the next one
    # try again, rather than the dashboard hang.
    client = open_client(args)
    async with client, trio.open_nursery() as nursery:
        listening = await nursery.start(serve, client._require("dashboard"), settings)
        # One line a script (or a test) can read the bound URL from, e.g. with --port 0.
        print(f"dashboard of {redact_url(url)} listening on {listening}", flush=True)
