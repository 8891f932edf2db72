"""Module paths that moved, still importable for the pickles stored under them.

A pickled value names its class by module and qualified name (``dbos_trio._errors._rebuild``,
``dbos_trio.engine.status.StepInfo``), and rows written before the package took its present
shape (release 0.1, before the private ``_engine``/``_sysdb`` tree) hold such names for as long
as they are kept. This finder answers an import of an old path with the module now at the new
one — the same module object, so an unpickled value is an instance of today's class — and only
when something asks for it: nothing is imported ahead of time, and no old path appears in a
traceback or a repr.

Layer: the package root installs it (``dbos_trio/__init__.py``); it imports nothing of
dbos_trio itself. Invariant: an entry is added when a module moves and never removed while a
supported release may have written rows naming it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

# Whole packages renamed, old prefix -> new prefix (under ``dbos_trio.``).
_PACKAGES = {
    "core": "_core",
    "sysdb": "_sysdb",
    "datasource": "_datasource",
    "client": "_client",
}

# Single modules that moved (longest-prefix rules above do not cover them).
_MODULES = {
    "_errors": "errors",
    "sysdb.postgres.driver": "_pg.driver",
    "sysdb.postgres.pool": "_pg.pool",
    "sysdb.postgres.connecting": "_pg.connecting",
    "sysdb.postgres.waiting": "_pg.waiting",
    "sysdb.postgres.fast_statements": "_pg.fast_statements",
    "sysdb.postgres.scrubbing": "_pg.scrubbing",
    "engine.dispatch": "_engine.runtime.dispatch",
    "engine.drain": "_engine.runtime.drain",
    "engine.executor": "_engine.state",
    "engine.launch": "_engine.runtime.launch",
    "engine.orphans": "_engine.runtime.orphans",
    "engine.pacing": "_engine.runtime.pacing",
    "engine.timeouts": "_engine.admin.timeouts",
    "engine.watch": "_engine.runtime.watch",
    "engine.checkpoint": "_engine.workflows.checkpoint",
    "engine.children": "_engine.workflows.children",
    "engine.concurrency": "_engine.workflows.concurrency",
    "engine.context": "_engine.context",
    "engine.execute": "_engine.workflows.execution",
    "engine.handle": "_engine.workflows.handle",
    "engine.nursery": "_engine.workflows.nursery",
    "engine.options": "_engine.workflows.options",
    "engine.outcomes": "_engine.workflows.outcomes",
    "engine.placement": "_engine.workflows.placement",
    "engine.rows": "_engine.workflows.rows",
    "engine.start": "_engine.workflows.start",
    "engine.status": "_engine.workflows.status",
    "engine.step": "_engine.workflows.step",
    "engine.step_status": "_engine.workflows.step_status",
    "engine.turns": "_engine.workflows.turns",
    "engine.bulk": "_engine.durable.send_many",
    "engine.events": "_engine.durable.events",
    "engine.messages": "_engine.durable.messages",
    "engine.patching": "_engine.durable.patching",
    "engine.results": "_engine.durable.published",
    "engine.sleep": "_engine.durable.sleep",
    "engine.streams": "_engine.durable.streams",
    "engine.transactions": "_engine.durable.transactions",
    "engine.waits": "_engine.durable.waits",
    "engine.dequeue": "_engine.runtime.dequeue",
    "engine.enqueue_named": "_engine.queues.by_name",
    "engine.queue_admin": "_engine.queues.stored",
    "engine.queues": "_engine.queues.enqueue",
    "engine.debounce": "_engine.schedules.debounce_loop",
    "engine.debounced": "_engine.schedules.debouncer",
    "engine.firing": "_engine.schedules.firing",
    "engine.scheduler": "_engine.schedules.scheduler",
    "engine.schedules": "_engine.schedules.definitions",
    "engine.adoption": "_engine.recovery.adoption",
    "engine.doctor": "_engine.recovery.doctor",
    "engine.recovery": "_engine.recovery.at_launch",
    "engine.versions": "_engine.recovery.versions",
    "engine.logcontext": "_engine.observability.logs",
    "engine.metrics": "_engine.observability.metrics",
    "engine.metrics_access": "_engine.observability.lazy_metrics",
    "engine.telemetry": "_engine.observability.hooks",
    "engine.tracing": "_engine.observability.tracing",
    "engine.admin": "_engine.admin.edit",
    "engine.fork": "_engine.admin.fork",
    "engine.management": "_engine.admin.management",
    "engine.rename": "_engine.admin.rename",
    "engine.retention": "_engine.admin.retention",
}

_ROOT = "dbos_trio."


def new_location(old: str) -> str | None:
    """Where the module once importable as ``old`` lives now, or None if it never moved."""
    if not old.startswith(_ROOT):
        return None
    relative = old[len(_ROOT) :]
    if relative in _MODULES:
        return _ROOT + _MODULES[relative]
    if relative == "engine":
        return _ROOT + "_engine"
    head, _, rest = relative.partition(".")
    if head in _PACKAGES:
        return _ROOT + _PACKAGES[head] + ("." + rest if rest else "")
    return None


class _MovedModuleLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self._target = target
        self._own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # The module already at its new path, shared: the old name is only another key.
        module = importlib.import_module(self._target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # Already executed under its own name; executing it again would re-create its classes.
        # The import system has just set module.__spec__ to the old name's spec, unasked:
        # give the module its own back, or a package would stop looking like one (its
        # importlib.resources files, its submodules) to every later reader.
        if self._own_spec is not None:
            module.__spec__ = self._own_spec


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        moved_to = new_location(fullname)
        if moved_to is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedModuleLoader(moved_to))


def install() -> None:
    """Answer imports of moved paths (idempotent: a second call adds nothing)."""
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        # First in line: an old name can coincide with a new package (``engine.admin`` was a
        # module, ``_engine.admin`` is a package), and the path finder would import that
        # package a second time under the old name.
        sys.meta_path.insert(0, _MovedModuleFinder())
