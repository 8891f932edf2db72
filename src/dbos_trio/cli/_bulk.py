"""``workflow cancel|resume|delete`` on one id or many: check all, act on each, report.

Invariants, and why:

* Every id is looked up before the first one is changed: a typo among fifty ids exits 3
  (not found) with nothing changed, rather than half a batch done.
* ``-`` among the ids reads more ids from standard input, one a line (blank lines
  skipped), so a listing pipes into an action:
  ``dbos-trio workflow list --status PENDING --json | jq -r '.[].workflow_id' |
  dbos-trio workflow cancel -``.
* Output has the natural shape: for one id one line (``--json``: one object), for
  several one line each (``--json``: one list). Progress (``cancelled 12/50``) goes to
  stderr, never stdout, so it cannot corrupt JSON; by default it is drawn for ``--json``
  on a terminal (without ``--json`` each id's line is the progress), always with
  ``--progress``, never with ``--no-progress``.
* Ctrl-C between two ids stops there: what was done is done (each action is one
  transaction), the rest is untouched, and the command exits 130.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from dbos_trio._client import Client
    from dbos_trio._engine.workflows.status import WorkflowStatus

STDIN = "-"


def add_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """The ids and the progress switch of a bulk action (``verb``: cancel, resume, ...)."""
    parser.add_argument(
        "workflow_ids",
        metavar="workflow_id",
        nargs="+",
        help=f"the workflow(s) to {verb}; '-' reads more ids from stdin, one a line",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress on stderr (default: with --json, when stderr is a terminal)",
    )


def workflow_ids(args: argparse.Namespace, stdin: TextIO | None = None) -> list[str]:
    """The ids named on the command line, ``-`` replaced by those read from stdin, in
    order, each once."""
    found: list[str] = []
    for given in args.workflow_ids:
        if given == STDIN:
            lines = (stdin or sys.stdin).read().splitlines()
            found.extend(line.strip() for line in lines if line.strip())
        else:
            found.append(given)
    return list(dict.fromkeys(found))


class Progress:
    """``<done> n/total`` on stderr, redrawn in place on a terminal, one line each else."""

    def __init__(self, done: str, total: int, enabled: bool) -> None:
        self.done, self.total = done, total
        self.tty = sys.stderr.isatty()
        self.enabled = enabled and total > 1

    def update(self, count: int) -> None:
        if not self.enabled:
            return
        line = f"{self.done} {count}/{self.total}"
        if self.tty:
            print(f"\r{line}", end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self.enabled and self.tty:
            print(file=sys.stderr, flush=True)


async def each(
    args: argparse.Namespace,
    client: Client,
    done: str,
    existing: Callable[[Client, str], Awaitable[WorkflowStatus]],
    act: Callable[[str], Awaitable[Any]],
) -> None:
    """Look every id up (``existing`` raises not-found), then ``act`` on each in order,
    printing the result in the natural shape (see the module docs).

    Errors propagate at once (the ids not reached are untouched); so does cancellation.
    """
    ids = workflow_ids(args)
    for workflow_id in ids:
        await existing(client, workflow_id)
    # A person at a terminal already sees one line per id; JSON prints only at the end.
    wanted = args.progress if args.progress is not None else (args.json and sys.stderr.isatty())
    progress = Progress(done, len(ids), wanted)
    results: list[dict[str, Any]] = []
    try:
        for count, workflow_id in enumerate(ids, start=1):
            await act(workflow_id)
            results.append({"workflow_id": workflow_id, done: True})
            if not args.json:
                print(f"{done} {workflow_id}", flush=True)
            progress.update(count)
    finally:
        progress.finish()
    if args.json:
        single = len(args.workflow_ids) == 1 and args.workflow_ids[0] != STDIN
        print(json.dumps(results[0] if single else results))
