"""``dbos-trio``: the command line of a system database (the console script's entry point).

One private module per command group (``workflow``, ``queue``, ``schedule``, ``version``,
``gc``, ``dashboard``); :func:`main` parses and dispatches. Exit codes by kind are in
:mod:`dbos_trio.cli._errors` and docs/reference/cli.md.

Layer: a face. It reaches the system database through the same operations as ``Client``.
"""

from dbos_trio.cli._main import main

__all__ = ["main"]
