"""Public names report where users import them, not the private module that defines them.

``WorkflowHandle`` is defined in ``dbos_trio._engine.workflows.handle``; a user imports it
from ``dbos_trio``. Rewriting ``__module__`` (and the members' too) on re-export makes reprs,
tracebacks, ``help()`` and the API reference name ``dbos_trio.WorkflowHandle``, and pickles
made from today name the public path, which outlives any move of the private tree (older
pickles are answered by :mod:`dbos_trio._moved`). As trio does with ``fixup_module_metadata``.

Layer: used by the public packages' ``__init__``; imports nothing of dbos_trio.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def fixup_module_metadata(public: str, namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Set ``__module__`` of each class and function in ``names`` (and of the methods and
    nested classes they define) to ``public``, when they are defined in a private module of
    this package or in a public submodule that re-exports into ``public``."""
    seen: set[int] = set()

    def fix(obj: Any, qualname: str) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        module = getattr(obj, "__module__", None)
        root = public.split(".")[0]
        if not isinstance(module, str) or not module.startswith(root + "."):
            return
        if not (_is_private(module) or module.rsplit(".", 1)[0] == public):
            return
        obj.__module__ = public
        if isinstance(obj, type):
            for attribute, value in vars(obj).items():
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                elif isinstance(value, property):
                    value = value.fget
                if callable(value) and getattr(value, "__qualname__", "") == (
                    f"{qualname}.{attribute}"
                ):
                    fix(value, f"{qualname}.{attribute}")

    for name in names:
        obj = namespace[name]
        if isinstance(obj, type) or callable(obj):
            fix(obj, getattr(obj, "__qualname__", name))
