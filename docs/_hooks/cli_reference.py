"""An MkDocs hook: the command-line reference, generated from the CLI's own parser.

``reference/cli.md`` holds the marker ``<!-- dbos-trio-commands -->``; at build time it is
replaced by the ``--help`` text of ``dbos-trio`` and of every subcommand, found by walking
the argparse tree. A command or option added to the CLI appears in the docs with the help
text it was given, and nothing written by hand can drift from it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- dbos-trio-commands -->"


def _subcommands(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:  # argparse exposes subparsers only through _actions
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _subcommands(child, (*path, name))


def _root_parser(cli: Any) -> argparse.ArgumentParser:
    """The CLI's top-level parser, from whichever builder function the module has."""
    for name in ("build_parser", "make_parser", "parser", "_parser"):
        builder = getattr(cli, name, None)
        if callable(builder):
            parser = builder()
            if isinstance(parser, argparse.ArgumentParser):
                return parser
    raise RuntimeError("dbos_trio.cli._main has no parser builder for the CLI reference")


def render() -> str:
    """Markdown: one section per command, its usage and options as ``--help`` shows them."""
    from dbos_trio.cli import _main as cli
    # A fixed width, so the page does not depend on the terminal that builds it.
    os.environ["COLUMNS"] = "100"
    parser = _root_parser(cli)
    parts = []
    for path, command in _subcommands(parser, ("dbos-trio",)):
        title = " ".join(path)
        level = "#" * min(2 + len(path) - 1, 4)
        parts.append(f"{level} `{title}`\n\n```text\n{command.format_help().rstrip()}\n```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, render())
    return markdown
