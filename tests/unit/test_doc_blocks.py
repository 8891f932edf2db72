"""Every Python block in README.md and docs/ is covered by CI: run (here, in
tests/integration/test_doc_blocks_run.py, or by the test its marker names) or marked as a
fragment, and every one compiles. A block with no marker fails, so a new example cannot
slip in untested; see tests/support/doc_blocks.py for the markers."""

from __future__ import annotations

import ast

import pytest

from support.doc_blocks import ROOT, Block, python_blocks

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
