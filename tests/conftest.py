"""The suite's configuration: shared fixtures, registered once, and the backend markers.

Every shared fixture lives in a module of ``tests/support`` listed in ``pytest_plugins``
below, and exists in every test module without an import; test modules import only
helpers from ``support``. (``tests/`` itself is on ``sys.path`` because this file is
imported in pytest's default ``prepend`` mode from a directory without ``__init__.py``.)
"""

from __future__ import annotations

import pytest

# Before anything of support is imported: its helpers' asserts report like a test's, and
# support.backends, imported just below, is still rewritten as the plugin it also is.
pytest.register_assert_rewrite("support")

from support.backends import (  # noqa: E402
    POSTGRES_ONLY,
    POSTGRES_ONLY_MODULE,
    apply_backend_markers,
)

pytest_plugins = [
    "support.backends",  # backend, *_template, system/module/empty_database_url
    "support.dbos_fixtures",  # dbos_url, make_dbos, statement_counter
    "support.time_fixtures",  # db_url, new_dbos, notify
    "support.app_databases",  # app_database_url
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", POSTGRES_ONLY)
    config.addinivalue_line("markers", POSTGRES_ONLY_MODULE)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    apply_backend_markers(config, items)
