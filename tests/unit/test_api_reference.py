"""The API reference lists ``DBOS``'s members by what a program reaches for first (the
launch, workflows and steps, queues, ...), in groups with explicit member lists
(docs/reference/api/dbos.md). An explicit list would silently drop a method added later:
every public member must be in exactly one group, and every listed name must exist."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from dbos_trio import DBOS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "api" / "dbos.md"


def _listed() -> list[str]:
    return re.findall(r"^        - (\w+)$", PAGE.read_text(), re.M)


def _public() -> set[str]:
    return {
        name
        for cls in DBOS.__mro__
        if cls is not object
        for name in vars(cls)
        if not name.startswith("_")
    }


def test_every_public_member_of_dbos_is_in_exactly_one_group() -> None:
    listed = Counter(_listed())
    assert [name for name, times in listed.items() if times > 1] == []
    assert sorted(_public() - set(listed)) == [], "add them to a group in dbos.md"
    assert sorted(set(listed) - _public()) == [], "no such member of DBOS"


def test_the_page_starts_with_what_a_program_needs_first() -> None:
    assert _listed()[:5] == ["launched", "serve", "workflow", "step", "on_failure"]
    assert "show_bases: false" in PAGE.read_text()
