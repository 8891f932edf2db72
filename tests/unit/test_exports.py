"""What users import is exactly the public face, and every public name says where it lives.

As trio's ``test_exports``: the modules without a ``_`` in their path are the user's API and
nothing else; every name exported from them reports the public module it is imported from
(``dbos_trio.WorkflowHandle``, not the private module defining it), so reprs, tracebacks and
pickles name a path that survives a reshuffle of the private tree; and values pickled under the
module paths of the old tree (before ``_engine``/``_sysdb``) still load.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
import types

import pytest

import dbos_trio
import dbos_trio.errors
import dbos_trio.testing
from dbos_trio import PickleSerializer
from dbos_trio._moved import new_location

PUBLIC_MODULES = {
    "dbos_trio",
    "dbos_trio.aio",
    "dbos_trio.cli",
    "dbos_trio.dashboard",
    "dbos_trio.errors",
    "dbos_trio.testing",
    "dbos_trio.testing.faults",
    "dbos_trio.testing.pytest_plugin",
}


def _all_modules() -> list[str]:
    return ["dbos_trio"] + [
        info.name for info in pkgutil.walk_packages(dbos_trio.__path__, prefix="dbos_trio.")
    ]


def test_the_public_modules_are_exactly_the_users_api() -> None:
    public = {
        name
        for name in _all_modules()
        if not any(part.startswith("_") for part in name.split("."))
    }
    assert public == PUBLIC_MODULES


@pytest.mark.parametrize(
    "module", [dbos_trio, dbos_trio.errors, dbos_trio.testing], ids=lambda m: m.__name__
)
def test_every_exported_class_and_function_names_a_public_module(
    module: types.ModuleType,
) -> None:
    private = {
        name: value.__module__
        for name in module.__all__
        if (inspect.isclass(value := getattr(module, name)) or inspect.isfunction(value))
        and any(part.startswith("_") for part in value.__module__.split("."))
    }
    assert not private, f"exported from {module.__name__} with a private __module__: {private}"


def test_a_public_class_reports_the_package_root() -> None:
    assert repr(dbos_trio.WorkflowHandle) == "<class 'dbos_trio.WorkflowHandle'>"
    assert dbos_trio.DBOSMaxStepRetriesExceeded.__module__ == "dbos_trio"
    assert dbos_trio.Client.__module__ == "dbos_trio"


def test_every_error_class_of_the_root_is_in_dbos_trio_errors() -> None:
    errors = {
        name
        for name in dbos_trio.__all__
        if inspect.isclass(value := getattr(dbos_trio, name))
        and issubclass(value, BaseException)
    }
    missing = sorted(name for name in errors if getattr(dbos_trio.errors, name, None) is None)
    assert not missing


def test_every_public_module_imports_on_its_own() -> None:
    # Each in a fresh interpreter: a module that only works after another was imported
    # would pass here in-process.
    for name in sorted(PUBLIC_MODULES - {"dbos_trio.testing.pytest_plugin"}):
        subprocess.run([sys.executable, "-c", f"import {name}"], check=True)


# Values pickled by the code of the old tree (at 80f2582), as rows hold them: an error
# recorded as a step's outcome, a step listing and a version returned by a step.
OLD_ROWS = {
    'max_retries': (
        'dbos_trio._errors.DBOSMaxStepRetriesExceeded',
        'gASV9QAAAAAAAACMEWRib3NfdHJpby5fZXJyb3JzlIwIX3JlYnVpbGSUk5RoAIwaREJPU01heFN0ZXBSZXRyaWVzRXhjZWVkZWSUk5R9lCiMCXN0ZXBfbmFtZZSMBmNoYXJnZZSMC21heF9yZXRyaWVzlEsDjAZlcnJvcnOUXZSMCGJ1aWx0aW5zlIwKVmFsdWVFcnJvcpSTlIwGYm9vbSAxlIWUUpRhjAdtZXNzYWdllIwxU3RlcCBjaGFyZ2UgaGFzIGV4Y2VlZGVkIGl0cyBtYXhpbXVtIG9mIDMgcmV0cmllc5SMD2Rib3NfZXJyb3JfY29kZZRLB3WGlFKULg==',
    ),
    'step_timeout': (
        'dbos_trio._errors.DBOSStepTimeoutError',
        'gASV2gAAAAAAAACMEWRib3NfdHJpby5fZXJyb3JzlIwIX3JlYnVpbGSUk5RoAIwUREJPU1N0ZXBUaW1lb3V0RXJyb3KUk5R9lCiMCXN0ZXBfbmFtZZSMBmNoYXJnZZSMD3RpbWVvdXRfc2Vjb25kc5RHP/gAAAAAAACMB21lc3NhZ2WUjERTdGVwIGNoYXJnZSB3YXMgY2FuY2VsbGVkIGFmdGVyIGV4Y2VlZGluZyBpdHMgdGltZW91dCBvZiAxLjUgc2Vjb25kc5SMD2Rib3NfZXJyb3JfY29kZZRLEnWGlFKULg==',
    ),
    'nonexistent': (
        'dbos_trio._errors.DBOSNonExistentWorkflowError',
        'gASVwgAAAAAAAACMEWRib3NfdHJpby5fZXJyb3JzlIwIX3JlYnVpbGSUk5RoAIwcREJPU05vbkV4aXN0ZW50V29ya2Zsb3dFcnJvcpSTlH2UKIwLZGVzdGluYXRpb26UjAR3Zi0xlIwOZGVzdGluYXRpb25faWSUaAeMB21lc3NhZ2WUjCxUaGVyZSBpcyBubyB3b3JrZmxvdyB3aXRoIElEIHdmLTEgKHRoZSB3Zi0xKZSMD2Rib3NfZXJyb3JfY29kZZRLBXWGlFKULg==',
    ),
    'outcome_unknown': (
        'dbos_trio.datasource.protocol.TransactionOutcomeUnknown',
        'gASVjAAAAAAAAACMEWRib3NfdHJpby5fZXJyb3JzlIwIX3JlYnVpbGSUk5SMHWRib3NfdHJpby5kYXRhc291cmNlLnByb3RvY29slIwZVHJhbnNhY3Rpb25PdXRjb21lVW5rbm93bpSTlH2UKIwHbWVzc2FnZZSMBGxvc3SUjA9kYm9zX2Vycm9yX2NvZGWUTnWGlFKULg==',
    ),
    'invalid_value': (
        'dbos_trio.sysdb.errors.InvalidValueError',
        'gASVggAAAAAAAACMEWRib3NfdHJpby5fZXJyb3JzlIwIX3JlYnVpbGSUk5SMFmRib3NfdHJpby5zeXNkYi5lcnJvcnOUjBFJbnZhbGlkVmFsdWVFcnJvcpSTlH2UKIwHbWVzc2FnZZSMCWJhZCB2YWx1ZZSMD2Rib3NfZXJyb3JfY29kZZROdYaUUpQu',
    ),
    'step_info': (
        'dbos_trio.engine.status.StepInfo',
        'gASVyAAAAAAAAACMF2Rib3NfdHJpby5lbmdpbmUuc3RhdHVzlIwIU3RlcEluZm+Uk5QpgZR9lCiMC2Z1bmN0aW9uX2lklEsBjA1mdW5jdGlvbl9uYW1llIwGY2hhcmdllIwGb3V0cHV0lE3iBIwFZXJyb3KUTowRY2hpbGRfd29ya2Zsb3dfaWSUTowPY2hpbGRfc2hhcmRfa2V5lE6ME3N0YXJ0ZWRfYXRfZXBvY2hfbXOUSwGMFWNvbXBsZXRlZF9hdF9lcG9jaF9tc5RLAnViLg==',
    ),
    'version': (
        'dbos_trio.sysdb.records.ApplicationVersion',
        'gASVngAAAAAAAACMF2Rib3NfdHJpby5zeXNkYi5yZWNvcmRzlIwSQXBwbGljYXRpb25WZXJzaW9ulJOUKYGUfZQojAp2ZXJzaW9uX2lklIwBdpSMDHZlcnNpb25fbmFtZZSMAzEuMJSMEXZlcnNpb25fdGltZXN0YW1wlEsDjApjcmVhdGVkX2F0lEsEjBBhcHBsaWNhdGlvbl9uYW1llIwDYXBwlHViLg==',
    ),
}


@pytest.mark.parametrize("name", sorted(OLD_ROWS))
def test_a_value_pickled_under_an_old_module_path_still_decodes(name: str) -> None:
    old_path, text = OLD_ROWS[name]
    value = PickleSerializer().deserialize(text)
    old_module, _, qualname = old_path.rpartition(".")
    today = importlib.import_module(new_location(old_module) or old_module)
    assert type(value) is getattr(today, qualname)
    # It is today's class, not a second copy loaded under the old name.
    assert type(value) is getattr(importlib.import_module(old_module), qualname)


def test_a_decoded_old_error_keeps_its_fields_and_message() -> None:
    value = PickleSerializer().deserialize(OLD_ROWS["max_retries"][1])
    assert isinstance(value, dbos_trio.DBOSMaxStepRetriesExceeded)
    assert value.dbos_error_code == 7
    assert [str(error) for error in value.errors] == ["boom 1"]
    assert "charge" in str(value)


def test_an_old_path_is_an_alias_of_the_new_module_not_a_copy() -> None:
    old = importlib.import_module("dbos_trio.engine.status")
    assert old is importlib.import_module("dbos_trio._engine.workflows.status")
    # An old module name that is a package today resolves to the old module's new home.
    assert importlib.import_module("dbos_trio.engine.admin") is importlib.import_module(
        "dbos_trio._engine.admin.edit"
    )


def test_a_path_that_never_existed_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("dbos_trio.engine.no_such_module")


def test_importing_an_old_path_leaves_the_new_module_as_it_was() -> None:
    # Run in a fresh interpreter: the import system sets __spec__ on the module an old path
    # resolves to, and a package whose spec was replaced stopped being a package
    # (importlib.resources refused it: "'dbos_trio._datasource' is not a package").
    code = (
        "import importlib, importlib.resources as r, dbos_trio\n"
        "importlib.import_module('dbos_trio.datasource.protocol')\n"
        "importlib.import_module('dbos_trio.engine.status')\n"
        "import dbos_trio._datasource as ds, dbos_trio._engine.workflows.status as st\n"
        "assert ds.__spec__.name == 'dbos_trio._datasource', ds.__spec__\n"
        "assert ds.__spec__.submodule_search_locations, ds.__spec__\n"
        "assert st.__spec__.name == 'dbos_trio._engine.workflows.status', st.__spec__\n"
        "assert any(f.name.endswith('.sql') for f in r.files('dbos_trio._datasource')"
        ".joinpath('queries').iterdir())\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
