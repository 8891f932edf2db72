"""Config validation, environment fallbacks, identity resolution and URL redaction.

Pure unit tests: nothing here connects to a database.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dbos_trio import Config, DBOSConfigError, DBOSInitializationError, PortableJSONSerializer
from dbos_trio._config import redact_url
from dbos_trio._identity import default_app_version, resolve_identity
from dbos_trio._registry import RegisteredWorkflow

# --------------------------------------------------------------------------- app name


@pytest.mark.parametrize("name", ["abc", "orders", "my-app_2", "0-0", "a" * 256])
def test_an_app_name_of_lowercase_letters_digits_dashes_and_underscores_is_accepted(
    name: str,
) -> None:
    assert Config(app_name=name).app_name == name


@pytest.mark.parametrize(
    "name", ["ab", "", "Orders", "my app", "app.name", "app/name", "é-app", "a" * 257, 123, None]
)
def test_an_app_name_outside_the_rule_fails_naming_the_field(name: Any) -> None:
    with pytest.raises(DBOSConfigError, match=r"Config\.app_name") as raised:
        Config(app_name=name)

    assert isinstance(raised.value, DBOSInitializationError)
    assert raised.value.dbos_error_code == 3


def test_the_app_name_is_required() -> None:
    with pytest.raises(TypeError, match="app_name"):
        Config()  # type: ignore[call-arg]


# ------------------------------------------------------------------- every other field


INVALID_VALUES: list[tuple[str, Any]] = [
    ("database_url", ""),
    ("database_url", "   "),
    ("database_url", "mysql://user@host/db"),
    ("database_url", "localhost:5432"),
    ("database_url", 5432),
    ("schema", ""),
    ("schema", "s" * 64),
    ("schema", "é" * 32),  # 32 characters, 64 bytes: PostgreSQL would truncate it
    ("schema", "nul\x00byte"),
    ("schema", None),
    ("app_version", ""),
    ("app_version", "  "),
    ("app_version", 1),
    ("executor_id", ""),
    ("executor_id", 7),
    ("max_connections", 0),
    ("max_connections", -3),
    ("max_connections", 1.5),
    ("max_connections", "10"),
    ("max_connections", True),
    ("use_listen_notify", "yes"),
    ("use_listen_notify", 1),
    ("use_listen_notify", None),
    ("run_migrations", 0),
    ("run_migrations", "false"),
    ("listen_queues", "orders"),
    ("listen_queues", [""]),
    ("listen_queues", ["ok", 3]),
    ("serializer", object()),
    ("serializer", "py_pickle"),
    ("outcome_poll_interval", 0),
    ("outcome_poll_interval", -1.0),
    ("outcome_poll_interval", math.nan),
    ("outcome_poll_interval", math.inf),
    ("outcome_poll_interval", "1"),
    ("outcome_poll_interval", True),
    ("connect_timeout", 0),
    ("connect_timeout", math.inf),
    ("notification_coalesce", -0.01),
]


@pytest.mark.parametrize(("field", "value"), INVALID_VALUES)
def test_an_invalid_value_fails_at_construction_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(DBOSConfigError, match=rf"Config\.{field}\b"):
        Config(app_name="app", **{field: value})


def test_defaults_are_those_of_the_api() -> None:
    config = Config(app_name="app")

    assert config.database_url is None
    assert config.schema == "dbos"
    assert config.app_version is None
    assert config.executor_id is None
    assert config.max_connections == 10
    assert config.use_listen_notify is True
    assert config.run_migrations is True
    assert config.listen_queues is None
    assert config.serializer.name() == "py_pickle"
    assert config.outcome_poll_interval == 1.0


def test_valid_values_are_kept() -> None:
    serializer = PortableJSONSerializer()
    config = Config(
        app_name="app",
        database_url="postgresql://u@h/db",
        schema='Odd "schema" ' + "é" * 25,
        app_version="v1",
        executor_id="vm-1",
        max_connections=3,
        use_listen_notify=False,
        run_migrations=False,
        listen_queues=["a", "b"],
        serializer=serializer,
        outcome_poll_interval=0.25,
        connect_timeout=2,
    )

    assert config.listen_queues == ("a", "b")
    assert config.serializer is serializer
    assert config.max_connections == 3
    assert config.connect_timeout == 2


def test_config_is_frozen_and_keyword_only() -> None:
    config = Config(app_name="app")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.app_name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Config("app")  # type: ignore[misc]


def test_a_rejected_database_url_does_not_show_its_password() -> None:
    with pytest.raises(DBOSConfigError) as raised:
        Config(app_name="app", database_url="mysql://user:hunter2@host/db")

    assert "database_url" in str(raised.value)
    assert "hunter2" not in str(raised.value)


# ------------------------------------------------------------------ environment fallbacks


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for variable in (
        "DBOS_SYSTEM_DATABASE_URL",
        "DBOS_DATABASE_URL",
        "DBOS__APPVERSION",
        "DBOS__VMID",
        "DBOS__APPID",
    ):
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_the_configured_database_url_wins_over_the_environment(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("DBOS_SYSTEM_DATABASE_URL", "postgresql://env-system/db")
    clean_env.setenv("DBOS_DATABASE_URL", "postgresql://env-app/db")

    config = Config(app_name="app", database_url="postgresql://configured/db")

    assert config.resolved_database_url() == "postgresql://configured/db"


def test_the_system_database_url_variable_wins_over_the_database_url_variable(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("DBOS_SYSTEM_DATABASE_URL", "postgresql://env-system/db")
    clean_env.setenv("DBOS_DATABASE_URL", "postgresql://env-app/db")

    assert Config(app_name="app").resolved_database_url() == "postgresql://env-system/db"


def test_the_database_url_variable_is_used_when_the_system_one_is_unset_or_empty(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("DBOS_SYSTEM_DATABASE_URL", "")
    clean_env.setenv("DBOS_DATABASE_URL", "postgresql://env-app/db")

    assert Config(app_name="app").resolved_database_url() == "postgresql://env-app/db"


def test_without_a_url_anywhere_the_database_is_an_sqlite_file_named_after_the_app(
    clean_env: pytest.MonkeyPatch,
) -> None:
    assert Config(app_name="orders").resolved_database_url() == "sqlite:///orders.sqlite"


def test_identity_defaults_to_executor_local_and_a_source_hash_version(
    clean_env: pytest.MonkeyPatch,
) -> None:
    identity = resolve_identity(Config(app_name="app"), [])

    assert identity.app_name == "app"
    assert identity.executor_id == "local"
    assert identity.app_version == default_app_version("app", [])
    assert identity.application_id == ""  # as dbos 3.4 stores an unset DBOS__APPID


def test_identity_reads_version_executor_and_application_id_from_the_environment(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("DBOS__APPVERSION", "env-version")
    clean_env.setenv("DBOS__VMID", "vm-42")
    clean_env.setenv("DBOS__APPID", "app-id-7")

    identity = resolve_identity(Config(app_name="app"), [])

    assert identity.app_version == "env-version"
    assert identity.executor_id == "vm-42"
    assert identity.application_id == "app-id-7"


def test_configured_version_and_executor_id_win_over_the_environment(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("DBOS__APPVERSION", "env-version")
    clean_env.setenv("DBOS__VMID", "vm-42")

    identity = resolve_identity(Config(app_name="app", app_version="v9", executor_id="me"), [])

    assert identity.app_version == "v9"
    assert identity.executor_id == "me"


async def _first(x: int) -> int:
    return x


async def _second(x: int) -> int:
    return x + 1


def _registered(func: Any, name: str) -> RegisteredWorkflow:
    return RegisteredWorkflow(name=name, func=func, max_recovery_attempts=100, portable=False)


def test_the_default_version_depends_on_the_workflows_source_and_the_app_not_their_order() -> None:
    first, second = _registered(_first, "first"), _registered(_second, "second")

    both = default_app_version("app", [first, second])

    assert both == default_app_version("app", [second, first])
    assert both != default_app_version("app", [first])
    assert both != default_app_version("other-app", [first, second])
    assert len(both) == 32 and int(both, 16) >= 0


# ------------------------------------------------------------------------- redaction


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        (
            "postgresql://user:hunter2@host:5432/db",
            "postgresql://user:***@host:5432/db",
        ),
        ("postgres://:hunter2@host/db", "postgres://:***@host/db"),
        ("POSTGRESQL://user:hunter2@host/db", "POSTGRESQL://user:***@host/db"),
        (
            "postgresql+psycopg://user:hunter2@host/db",
            "postgresql+psycopg://user:***@host/db",
        ),
        (
            "postgresql://user:hunter2@h1:5432,h2:5433/db?sslmode=require",
            "postgresql://user:***@h1:5432,h2:5433/db?sslmode=require",
        ),
        ("postgresql://user:hun%40ter2@host/db", "postgresql://user:***@host/db"),
        ("postgresql://user:hun@ter2@host/db", "postgresql://user:***@host/db"),
        ("postgresql://user:hun/ter2@host/db", "postgresql://user:***@host/db"),
        (
            "postgresql://user:hunter2@host/db?application_name=a@b",
            "postgresql://user:***@host/db?application_name=a@b",
        ),
        (
            "postgresql://user@host/db?password=hunter2&sslmode=require",
            "postgresql://user@host/db?password=***&sslmode=require",
        ),
        (
            "postgresql://user@host/db?sslmode=require&PASSWORD=hunter2",
            "postgresql://user@host/db?sslmode=require&PASSWORD=***",
        ),
        ("host=h user=u password=hunter2 dbname=d", "host=h user=u password=*** dbname=d"),
        ("host=h password = 'hun ter2' dbname=d", "host=h password = *** dbname=d"),
        ("host=h password='hun\\'ter2' dbname=d", "host=h password=*** dbname=d"),
        ("postgresql://user@host:5432/db", "postgresql://user@host:5432/db"),
        ("postgresql://host/db", "postgresql://host/db"),
        ("sqlite:///app.sqlite", "sqlite:///app.sqlite"),
        (None, "None"),
    ],
)
def test_redact_url_hides_the_password_and_nothing_else(url: str | None, redacted: str) -> None:
    assert redact_url(url) == redacted


def test_the_config_repr_never_shows_the_password() -> None:
    config = Config(app_name="app", database_url="postgresql://user:hunter2@host/db")

    assert "hunter2" not in repr(config)
    assert "hunter2" not in str(config)
    assert "postgresql://user:***@host/db" in repr(config)
    # The value itself is intact: redaction is only for display.
    assert config.database_url == "postgresql://user:hunter2@host/db"


SECRET_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1
)


@given(SECRET_TEXT)
def test_a_percent_encoded_url_password_never_survives_redaction(secret: str) -> None:
    password = quote("S3cr" + secret, safe="")
    url = f"postgresql://user:{password}@db.example.com:5432/app?sslmode=require"

    shown = redact_url(url)

    assert password not in shown
    assert shown == "postgresql://user:***@db.example.com:5432/app?sslmode=require"


@given(SECRET_TEXT.filter(lambda s: not set(s) & set("?#")))
def test_an_unencoded_url_password_never_survives_redaction(secret: str) -> None:
    password = "S3cr" + secret
    shown = redact_url(f"postgresql://user:{password}@db.example.com/app")

    assert shown == "postgresql://user:***@db.example.com/app"


@given(SECRET_TEXT)
def test_a_quoted_key_value_password_never_survives_redaction(secret: str) -> None:
    escaped = ("S3cr" + secret).replace("\\", "\\\\").replace("'", "\\'")
    shown = redact_url(f"host=db.example.com password='{escaped}' dbname=app")

    assert shown == "host=db.example.com password=*** dbname=app"
