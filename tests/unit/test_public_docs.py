"""Every public name is documented, and ``__all__`` is exactly what the package exports.

Like trio's own check: a name a user can import from ``dbos_trio`` must have a docstring
(so ``help()`` and the API reference say what it does), must be rendered by a page of the
API reference, and must be listed in ``__all__`` — and ``__all__`` must list nothing else.
The calls the first-day report found silent must say what cancellation and errors do.
Attribute docstrings (``Config`` fields) exist only in the source, so griffe, the loader
the documentation build uses, reads them.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from pathlib import Path
from typing import Any

import griffe
import pytest

import dbos_trio
import dbos_trio.testing

ROOT = Path(__file__).resolve().parents[2]
API_PAGES = ROOT / "docs" / "reference" / "api"
ERROR_REFERENCE = ROOT / "docs" / "reference" / "errors.md"


def _exported(module: types.ModuleType) -> set[str]:
    """The public names bound in ``module`` that are not submodules."""
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }


@pytest.mark.parametrize("module", [dbos_trio, dbos_trio.testing], ids=lambda m: m.__name__)
def test_all_lists_exactly_the_exported_names(module: types.ModuleType) -> None:
    listed = list(module.__all__)
    assert len(listed) == len(set(listed)), "a name is listed twice in __all__"
    assert set(listed) == _exported(module)


def _own_doc(value: Any) -> str | None:
    if typing.get_origin(value) is not None:
        # A type alias has no docstring at run time: the one after it in the source.
        return _source_doc(value)
    if inspect.isclass(value):
        doc = vars(value).get("__doc__")
        return doc if isinstance(doc, str) else None
    return inspect.getdoc(value)


def _source_doc(alias: Any) -> str | None:
    package = griffe.load("dbos_trio", search_paths=[str(ROOT / "src")])
    for module_name in ("", "testing"):
        module = package[module_name] if module_name else package
        for name, member in module.members.items():
            if member.is_alias and name in getattr(
                dbos_trio.testing if module_name else dbos_trio, "__all__", ()
            ):
                target = member.final_target
                if target.is_attribute and typing.get_origin(alias) is not None:
                    value = getattr(dbos_trio.testing if module_name else dbos_trio, name)
                    if value is alias and target.docstring:
                        return target.docstring.value
    return None


def _public_members(cls: type) -> list[tuple[str, Any]]:
    """(qualified name, function) of each public method or property a user reaches on
    ``cls``, inherited ones included, defined by dbos_trio."""
    members = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("dbos_trio"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_"):
                continue
            if isinstance(value, property):
                members.append((f"{cls.__name__}.{name}", value.fget))
            elif isinstance(value, staticmethod | classmethod):
                members.append((f"{cls.__name__}.{name}", value.__func__))
            elif inspect.isfunction(value):
                members.append((f"{cls.__name__}.{name}", value))
    return members


@pytest.mark.parametrize("module", [dbos_trio, dbos_trio.testing], ids=lambda m: m.__name__)
def test_every_exported_name_and_its_public_members_have_docstrings(
    module: types.ModuleType,
) -> None:
    missing = [name for name in module.__all__ if not _own_doc(getattr(module, name))]
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value):
            missing += [qual for qual, func in _public_members(value) if not func.__doc__]
    assert missing == []


def test_every_config_field_is_documented() -> None:
    package = griffe.load("dbos_trio", search_paths=[str(ROOT / "src")])
    config = package["_config.Config"]
    fields = [name for name, member in config.members.items() if member.is_attribute]
    assert "app_name" in fields and "database_url" in fields  # the loader found them
    undocumented = [name for name in fields if not config.members[name].docstring]
    assert undocumented == []


def test_help_of_config_describes_every_field() -> None:
    # help() shows the class docstring, not the attribute docstrings griffe reads.
    import attrs

    doc = dbos_trio.Config.__doc__ or ""
    assert [f.name for f in attrs.fields(dbos_trio.Config) if f"``{f.name}``" not in doc] == []


def test_every_exported_name_is_rendered_by_the_api_reference() -> None:
    rendered = set()
    for page in API_PAGES.glob("*.md"):
        rendered |= set(re.findall(r"^::: (dbos_trio[\w.]*)$", page.read_text(), re.MULTILINE))
    wanted = {f"dbos_trio.{name}" for name in dbos_trio.__all__}
    assert wanted - rendered == set()
    assert "dbos_trio.testing" in rendered


def test_every_error_class_is_in_the_error_reference() -> None:
    text = ERROR_REFERENCE.read_text()
    errors = [
        name
        for name in dbos_trio.__all__
        if inspect.isclass(getattr(dbos_trio, name))
        and issubclass(getattr(dbos_trio, name), BaseException)
    ]
    assert len(errors) > 20
    assert [name for name in errors if f"`{name}`" not in text] == []


# The calls the first-day report found without a word on cancellation or errors.
SILENT_BEFORE = [
    (dbos_trio.DBOS, "list_workflows"),
    (dbos_trio.DBOS, "get_workflow_status"),
    (dbos_trio.DBOS, "retrieve_workflow"),
    (dbos_trio.DBOS, "delete_workflow"),
    (dbos_trio.DBOS, "write_stream"),
    (dbos_trio.DBOS, "close_stream"),
    (dbos_trio.DBOS, "list_queues"),
    (dbos_trio.DBOS, "retrieve_queue"),
    (dbos_trio.Client, "list_workflows"),
    (dbos_trio.Client, "get_workflow_status"),
    (dbos_trio.Client, "retrieve_workflow"),
    (dbos_trio.Client, "delete_workflow"),
    (dbos_trio.Client, "cancel_workflows"),
    (dbos_trio.Client, "resume_workflows"),
]


@pytest.mark.parametrize(("cls", "name"), SILENT_BEFORE, ids=lambda v: getattr(v, "__name__", v))
def test_the_formerly_silent_calls_say_what_cancellation_and_errors_do(
    cls: type, name: str
) -> None:
    doc = inspect.getdoc(getattr(cls, name)) or ""
    assert "cancel" in doc.lower(), f"{cls.__name__}.{name}: nothing on cancellation"
    assert "raises" in doc.lower() or "error" in doc.lower(), f"{cls.__name__}.{name}: errors?"


@pytest.mark.parametrize("cls", [dbos_trio.DBOS, dbos_trio.Client], ids=lambda c: c.__name__)
def test_the_face_classes_state_the_cancellation_and_error_contract(cls: type) -> None:
    doc = _own_doc(cls) or ""
    assert "cancel" in doc.lower()
    assert "DBOSInitializationError" in doc or "SystemDatabaseError" in doc


def _load_hook(name: str) -> types.ModuleType:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "_hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_renders_every_command_from_the_parser() -> None:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    hook = _load_hook("cli_reference")
    assert hook.MARKER in page
    rendered = hook.on_page_markdown(page, page=None)
    for command in ("migrate", "workflow list", "workflow get", "workflow fork", "queue list"):
        assert f"## `dbos-trio {command}`" in rendered
    assert hook.MARKER not in rendered


def test_docstring_roles_become_links_only_to_documented_objects() -> None:
    convert = _load_hook("rst_roles").convert
    assert convert(":class:`~dbos_trio.Config`") == "[`Config`][dbos_trio.Config]"
    assert convert(":meth:`launch <dbos_trio.DBOS.launched>`") == (
        "[`launch`][dbos_trio.DBOS.launched]"
    )
    # An internal module is not rendered by the reference: plain code, never a dead link.
    assert convert(":class:`~dbos_trio._sysdb.errors.ConnectionLost`") == "`ConnectionLost`"
    assert convert("Like this::\n\n    code") == "Like this:\n\n    code"
