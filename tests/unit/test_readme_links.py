"""The README's links into the repository lead to files that exist.

``mkdocs build --strict`` checks the links between documentation pages; the README is
read on its own (on a forge, in an sdist), so its relative links are checked here. It
once pointed at ``../shared/docs/API.md``, which is not in the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _relative_links(text: str) -> list[str]:
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:", t)]


def test_every_relative_link_in_the_readme_exists() -> None:
    links = _relative_links((ROOT / "README.md").read_text())
    assert "docs/tutorial.md" in links  # the parse found the documentation links
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_the_readme_names_no_path_outside_the_repository() -> None:
    assert "../" not in "".join(_relative_links((ROOT / "README.md").read_text()))
