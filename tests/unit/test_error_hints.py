"""An error whose cause is a setting says which setting, where the driver's text does not.

``prepared statement "_dt_0" already exists`` at launch, behind a transaction-mode
PgBouncer, said nothing of the pooler or of ``Config(prepared_statements=False)``.
"""

from __future__ import annotations

import psycopg.errors

from dbos_trio._redact import NO_SECRETS
from dbos_trio._sysdb.errors import UnexpectedDatabaseError
from dbos_trio._sysdb.postgres.errors import map_error


def test_a_prepared_statement_clash_names_the_pooler_and_the_setting() -> None:
    clash = psycopg.errors.DuplicatePreparedStatement('prepared statement "_dt_0" already exists')
    mapped = map_error(clash, NO_SECRETS)
    assert isinstance(mapped, UnexpectedDatabaseError)
    assert '"_dt_0" already exists' in str(mapped)
    assert "prepared_statements=False" in str(mapped) and "PgBouncer" in str(mapped)


def test_a_missing_prepared_statement_says_the_same() -> None:
    missing = psycopg.errors.InvalidSqlStatementName('prepared statement "_dt_3" does not exist')
    assert "prepared_statements=False" in str(map_error(missing, NO_SECRETS))


def test_other_errors_carry_no_hint() -> None:
    other = psycopg.errors.UndefinedTable('relation "nope" does not exist')
    assert "PgBouncer" not in str(map_error(other, NO_SECRETS))
