"""The blocks marked ``<!-- doc-test: run -->`` in README.md and docs/ run as programs, as
a reader would run them: written to a file in a fresh directory (their SQLite database
lands there), run as ``__main__`` with no database URL from the environment, on Trio's
virtual clock (``MockClock(autojump_threshold=0)``), so a block's durable sleep costs no
real time. The README's first workflow is run twice: the second run must not charge
again."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from dbos_trio._config import DATABASE_URL_ENV, SYSTEM_DATABASE_URL_ENV

from support.doc_blocks import Block, python_blocks

RUNNABLE = [b for b in python_blocks() if b.kind == "run"]


def run_block(block: Block, directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_run: Callable[..., Any] = trio.run

    def on_virtual_time(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        clock = trio.testing.MockClock(autojump_threshold=0)
        return real_run(partial(fn, *args), clock=clock, **kwargs)

    program = directory / "block.py"
    program.write_text(block.code)
    with monkeypatch.context() as patched:
        patched.chdir(directory)
        patched.delenv(SYSTEM_DATABASE_URL_ENV, raising=False)
        patched.delenv(DATABASE_URL_ENV, raising=False)
        patched.setattr(trio, "run", on_virtual_time)
        runpy.run_path(str(program), run_name="__main__")


def test_some_blocks_are_run() -> None:
    assert {b.page.name for b in RUNNABLE} >= {"README.md", "index.md"}


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_a_runnable_block_runs(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_block(block, tmp_path, monkeypatch)
    first = capsys.readouterr().out
    assert "Traceback" not in first and first.strip(), first
    if "charge(" in block.code:  # the first workflow: run again, it is not charged twice
        run_block(block, tmp_path, monkeypatch)
        again = capsys.readouterr().out
        assert "charging order-1" in first and "charged 1250" in first
        assert "charging" not in again and again.strip().endswith("charged 1250"), again
