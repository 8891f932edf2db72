"""``dbos-trio workflow export ID... [--children] [--output FILE]`` and ``dbos-trio workflow
import FILE [--overwrite]``: a workflow's rows as a portable JSON bundle, and back.

Kept apart from :mod:`dbos_trio.cli._workflows`, which adds these actions to ``workflow``.
An export only reads (a missing id: exit 3); an import checks the file first (exit 1 and
nothing written for a file that is not a bundle), refuses ids the database already has
unless ``--overwrite``, and writes the whole bundle in one transaction.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import trio

from dbos_trio._clock import wall_clock_now
from dbos_trio._ops import bundles as ops
from dbos_trio.cli._common import open_client


def add_workflow_actions(actions: Any, common: argparse.ArgumentParser, command: Any) -> None:
    """Add ``export`` and ``import`` to the ``workflow`` command's ``actions``."""
    export = command(
        actions,
        "export",
        "write workflows' rows (status, inputs, steps, events, streams, messages) as a "
        "JSON bundle, payloads as stored",
        [common],
    )
    export.add_argument("workflow_ids", nargs="+", metavar="ID", help="the workflows")
    export.add_argument(
        "--children", action="store_true", help="with their child workflows, recursively"
    )
    export.add_argument(
        "--output", "-O", default=None, metavar="FILE", help="write here (default: stdout)"
    )
    export.set_defaults(run=_export)
    importing = command(
        actions,
        "import",
        "load a bundle written by export into this database (one transaction)",
        [common],
    )
    importing.add_argument("file", metavar="FILE", help="the bundle")
    importing.add_argument(
        "--overwrite", action="store_true", help="replace workflows whose ids exist here"
    )
    importing.set_defaults(run=_import)


async def _export(args: argparse.Namespace) -> None:
    async with open_client(args) as client:
        bundle = await ops.export_workflows(
            client._reach,
            args.workflow_ids,
            children=args.children,
            now_ms=int(wall_clock_now() * 1000),
        )
    text = json.dumps(bundle, indent=1, ensure_ascii=False) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return
    await trio.Path(args.output).write_text(text, encoding="utf-8")
    count = len(bundle["workflows"])
    print(f"exported {count} workflow(s) to {args.output}", file=sys.stderr)


async def _import(args: argparse.Namespace) -> None:
    document = ops.read_bundle_file(args.file)
    async with open_client(args) as client:
        written = await ops.import_bundle(client._reach, document, overwrite=args.overwrite)
    if args.json:
        print(json.dumps({"imported": written}))
    else:
        print(f"imported {len(written)} workflow(s): {', '.join(written)}")
