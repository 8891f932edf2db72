"""Every Python block in README.md and docs/ is covered by CI: run (here, in
tests/integration/test_doc_blocks_run.py, or by the test its marker names) or marked as a
fragment, and every one compiles. A block with no marker fails, so a new example cannot
slip in untested; see tests/support/doc_blocks.py for the markers. Every ``dbos-trio``
command shown in a shell or console block is accepted by the real parser (a renamed
option or command fails here, not in a reader's terminal)."""

from __future__ import annotations

import ast
import re
import shlex

import pytest

from dbos_trio.cli._main import _parser

from support.doc_blocks import ROOT, Block, blocks, pages, python_blocks

BLOCKS = python_blocks()
# Lets a fragment hold a top-level ``await`` / ``async with``, as pages show calls.
TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def test_the_pages_have_python_blocks_to_check() -> None:
    assert len(BLOCKS) >= 30
    assert {b.kind for b in BLOCKS} >= {"run", "run-by", "fragment"}


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.where)
def test_every_python_block_is_marked_and_compiles(block: Block) -> None:
    assert block.kind is not None, (
        f"{block.where}: mark the block with <!-- doc-test: run --> (and make it run), "
        "<!-- doc-test: run-by tests/....py --> or <!-- doc-test: fragment -->"
    )
    flags = TOP_LEVEL_AWAIT if block.kind == "fragment" else 0
    compile(block.code, block.where, "exec", flags=flags, dont_inherit=True)


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.kind == "run-by"], ids=lambda b: b.where
)
def test_a_block_run_elsewhere_names_a_test_that_reads_its_page(block: Block) -> None:
    assert block.runner is not None
    runner = ROOT / block.runner
    assert runner.is_file(), f"{block.where}: {block.runner} does not exist"
    source = runner.read_text()
    assert block.page.name in source, f"{block.runner} does not read {block.page.name}"
    if block.title is not None:  # the runner picks its files by their titles
        assert block.title in source, f"{block.runner} does not name {block.title}"


def _cli_commands() -> list[tuple[str, str]]:
    """Every ``dbos-trio ...`` command shown in a shell or console block: (where, argv
    text), cut at a pipe, redirection or ``&&``, optional ``[--flag]`` groups dropped."""
    found = []
    for page in pages():
        for block in blocks(page):
            if block.language not in ("sh", "bash", "shell", "console", ""):
                continue
            for line in block.code.splitlines():
                line = line.strip().removeprefix("$ ")
                if not line.startswith("dbos-trio "):
                    continue
                command = re.split(r"\s(?:\||>|&&|;|#)\s?", line)[0].rstrip("\\ ")
                found.append((block.where, re.sub(r"\s\[[^\]]*\]", "", command)))
    return found


COMMANDS = _cli_commands()


def test_the_pages_show_cli_commands() -> None:
    assert len(COMMANDS) >= 10


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_every_cli_command_shown_is_accepted_by_the_real_parser(where: str, command: str) -> None:
    try:
        _parser().parse_args(shlex.split(command)[1:])
    except SystemExit as refused:  # argparse: a usage error (exit 2) or --help/--version (0)
        assert refused.code == 0, f"{where}: dbos-trio refuses {command!r}"
