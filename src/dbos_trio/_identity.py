"""Who this executor is: application name, application version, executor id.

Resolved once per launch, config first, then environment, then defaults (the order the
official SDKs use, so processes of one deployment agree). The default version is a hash
of the registered workflows' source: a code change is a new version, and a new version
never recovers the old one's workflows (their steps may no longer line up).
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Iterable

import attrs

from dbos_trio._config import (
    APP_ID_ENV,
    APP_VERSION_ENV,
    DEFAULT_EXECUTOR_ID,
    EXECUTOR_ID_ENV,
    Config,
    require_optional_text,
)
from dbos_trio._registry import RegisteredWorkflow

LIBRARY_VERSION = "0.1.0"


@attrs.frozen
class Identity:
    app_name: str
    app_version: str
    executor_id: str
    application_id: str | None


def default_app_version(app_name: str, workflows: Iterable[RegisteredWorkflow]) -> str:
    """A stable hash of the registered workflows' source, this library's version and the app."""
    digest = hashlib.md5(usedforsecurity=False)
    sources = []
    for workflow in workflows:
        try:
            sources.append(inspect.getsource(workflow.func))
        except (OSError, TypeError):
            sources.append(workflow.name)
    for source in sorted(sources):
        digest.update(source.encode())
    digest.update(LIBRARY_VERSION.encode())
    digest.update(app_name.encode())
    return digest.hexdigest()


def _from_environment(variable: str) -> str | None:
    """The variable's value (None if unset or empty), checked by the rules Config applies
    to the same field: :class:`DBOSConfigError` naming the variable, before anything is
    written (a lone surrogate is what an invalid UTF-8 byte in the environment becomes)."""
    value = os.environ.get(variable) or None
    require_optional_text(value, variable)
    return value


def resolve_identity(config: Config, workflows: Iterable[RegisteredWorkflow]) -> Identity:
    app_version = (
        config.app_version
        or _from_environment(APP_VERSION_ENV)
        or default_app_version(config.app_name, workflows)
    )
    executor_id = config.executor_id or _from_environment(EXECUTOR_ID_ENV) or DEFAULT_EXECUTOR_ID
    return Identity(
        app_name=config.app_name,
        app_version=app_version,
        executor_id=executor_id,
        # "" when unset, as dbos 3.4 stores in the rows its executors write.
        application_id=_from_environment(APP_ID_ENV) or "",
    )
