"""The code blocks of README.md and docs/**/*.md, with the marker that says how CI covers
each (an HTML comment on the last non-blank line before the fence, invisible on the site
and on a forge):

* ``<!-- doc-test: run -->`` — executed by tests/integration/test_doc_blocks_run.py, as a
  program in a fresh directory (SQLite there, virtual time).
* ``<!-- doc-test: run-by tests/PATH.py -->`` — executed by that test, which reads the
  block from the page itself (the tutorial's programs, the web-service how-to's).
* ``<!-- doc-test: fragment -->`` — a piece of a program (names defined elsewhere, a
  top-level ``await``, a server it needs): compiled, not run.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M
)
MARKER = re.compile(r"<!--\s*doc-test:\s*(?P<kind>run-by|run|fragment)\s*(?P<arg>\S*)\s*-->")


@attrs.frozen
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    title: str | None
    code: str
    kind: str | None  # run, run-by, fragment; None: unmarked
    runner: str | None  # for run-by: the test file

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        info = match.group("info").strip()
        indent = match.group("indent")
        code = "".join(
            line[len(indent) :] if line.startswith(indent) else line
            for line in match.group("body").splitlines(keepends=True)
        )
        before = text[: match.start()].rstrip().splitlines()
        marker = MARKER.search(before[-1]) if before else None
        title = re.search(r'title="([^"]+)"', info)
        found.append(
            Block(
                page=page,
                line=text[: match.start()].count("\n") + 1,
                language=info.split()[0] if info else "",
                title=title.group(1) if title else None,
                code=code,
                kind=marker.group("kind") if marker else None,
                runner=(marker.group("arg") or None) if marker else None,
            )
        )
    return found


def python_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page) if b.language in ("python", "py")]
