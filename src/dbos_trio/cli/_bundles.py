"""``dbos-trio workflow export ID... [--children] [--output FILE]`` and ``dbos-trio workflow
import FILE [--overwrite]``: a workflow's rows as a portable JSON bundle, and back.

Kept apart from :mod:`dbos_trio.cli._workflows`, which adds these actions to ``workflow``.
An export only reads (a missing id: exit 3); with ``--payload-store DIR`` it embeds the
store entries the rows reference (bundle version 2), and without one says on stderr how
many references it left unresolved. An import checks the file first (exit 1 and nothing
written for a file that is not a bundle, or one carrying entries when no
``--payload-store`` names the target's store), refuses ids the database already has
unless ``--overwrite``, writes the entries into the store, then the rows in one
transaction.
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
        "JSON bundle, payloads as stored; with --payload-store, the store entries they "
        "reference too",
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
        "load a bundle written by export into this database (one transaction); its "
        "payload store entries into --payload-store",
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
    missing = ops.unembedded_references(bundle)
    if missing:
        print(
            f"note: the rows reference {missing} payload store entr"
            f"{'y' if missing == 1 else 'ies'} not carried by this bundle: export with "
            "--payload-store DIR to embed them",
            file=sys.stderr,
        )
    if args.output is None:
        sys.stdout.write(text)
        return
    await trio.Path(args.output).write_text(text, encoding="utf-8")
    count = len(bundle["workflows"])
    carried = len(bundle.get("payloads", {}))
    entries = (
        f" and {carried} payload store entr{'y' if carried == 1 else 'ies'}" if carried else ""
    )
    print(f"exported {count} workflow(s){entries} to {args.output}", file=sys.stderr)


async def _import(args: argparse.Namespace) -> None:
    document = ops.read_bundle_file(args.file)
    async with open_client(args) as client:
        written = await ops.import_bundle(client._reach, document, overwrite=args.overwrite)
    if args.json:
        print(json.dumps({"imported": written}))
    else:
        print(f"imported {len(written)} workflow(s): {', '.join(written)}")
