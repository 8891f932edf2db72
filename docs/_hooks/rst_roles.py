"""A griffe extension: the Sphinx roles in dbos_trio's docstrings, as Markdown links.

The docstrings are written for ``help()`` and editors, in reStructuredText roles
(``:class:`~dbos_trio.Config```, ``:meth:`DBOS.launched <dbos_trio.DBOS.launched>```).
mkdocstrings renders docstrings as Markdown, where those would show as literal text. This
turns each role into inline code, linked (autorefs ``[text][target]``) when the target is
an object the API reference documents: a name exported by ``dbos_trio`` or
``dbos_trio.testing``, or a member of one. Anything else stays unlinked code, so a role
naming an internal module never becomes a broken link (which ``--strict`` would fail).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

import dbos_trio
import dbos_trio.testing

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|data|attr|exc|obj):`([^`]+)`")
_LABELLED = re.compile(r"^(?P<text>.+?)\s*<(?P<target>[^>]+)>$")
_DOCUMENTED = {
    **{f"dbos_trio.{name}": getattr(dbos_trio, name) for name in dbos_trio.__all__},
    **{
        f"dbos_trio.testing.{name}": getattr(dbos_trio.testing, name)
        for name in dbos_trio.testing.__all__
    },
}
# Pages that document a module as a whole (see docs/reference/api/*.md).
_MODULES = {"dbos_trio.testing", "dbos_trio.testing.pytest_plugin"}


def _linkable(target: str) -> bool:
    if target in _DOCUMENTED or target in _MODULES:
        return True
    owner, _, member = target.rpartition(".")
    documented = _DOCUMENTED.get(owner)
    # A public member of a documented class is rendered under it (inherited ones too).
    return documented is not None and not member.startswith("_") and hasattr(documented, member)


def _replace(match: re.Match[str]) -> str:
    content = match.group(1).strip()
    labelled = _LABELLED.match(content)
    if labelled:
        text, target = labelled.group("text"), labelled.group("target")
    else:
        target = content.lstrip("~")
        text = target.rsplit(".", 1)[-1] if content.startswith("~") else target
    if _linkable(target):
        return f"[`{text}`][{target}]"
    return f"`{text}`"


def convert(text: str) -> str:
    """``text`` with every Sphinx role rewritten, and ``::`` literal-block markers as ``:``."""
    text = _ROLE.sub(_replace, text)
    text = re.sub(r"^[ \t]*::[ \t]*\n", "", text, flags=re.MULTILINE)  # a bare "::" line
    return re.sub(r"::$", ":", text, flags=re.MULTILINE)


class SphinxRolesToMarkdown(griffe.Extension):
    """Rewrites each object's docstring as it is loaded."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
