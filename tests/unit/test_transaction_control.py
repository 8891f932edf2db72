"""Transaction control in a transaction function's SQL is found before anything is sent.

The lexer of :mod:`dbos_trio._datasource.control`: statements that begin or end a
transaction are found wherever they stand in a multi-statement text; the same words inside
literals, identifiers, comments and dollar-quoted bodies, and savepoints, are not.
"""

from __future__ import annotations

import pytest

from dbos_trio._datasource.control import refusal, transaction_control


@pytest.mark.parametrize(
    ("sql", "found"),
    [
        ("COMMIT", "COMMIT"),
        ("commit;", "COMMIT"),
        ("INSERT INTO t VALUES (1); COMMIT; BEGIN", "COMMIT"),
        ("  rollback work", "ROLLBACK"),
        ("ROLLBACK TRANSACTION", "ROLLBACK"),
        ("BEGIN ISOLATION LEVEL SERIALIZABLE", "BEGIN"),
        ("start transaction", "START TRANSACTION"),
        ("END", "END"),
        ("end transaction;", "END"),
        ("ABORT", "ABORT"),
        ("PREPARE TRANSACTION 'x'", "PREPARE TRANSACTION"),
        ("ROLLBACK PREPARED 'x'", "ROLLBACK PREPARED"),
        ("SELECT 1; /* a comment */ COMMIT", "COMMIT"),
        ("-- first\nUPDATE t SET n = 1;\n-- then\nCOMMIT", "COMMIT"),
    ],
)
def test_statements_that_begin_or_end_a_transaction_are_found(sql: str, found: str) -> None:
    assert transaction_control(sql) == found


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 'COMMIT'",
        "INSERT INTO log (note) VALUES ('please commit; then begin')",
        'SELECT "commit" FROM t',
        "SELECT 1 -- COMMIT",
        "SELECT 1 /* ; COMMIT */",
        "DO $$ BEGIN PERFORM 1; END $$",
        "DO $body$ BEGIN COMMIT; END $body$",
        "SAVEPOINT before_risky",
        "ROLLBACK TO SAVEPOINT before_risky",
        "rollback transaction to before_risky",
        "RELEASE SAVEPOINT before_risky",
        "UPDATE t SET committed = true WHERE began = 'yes'",
        "SELECT 'it''s; COMMIT'",
        "",
    ],
)
def test_the_same_words_elsewhere_and_savepoints_are_allowed(sql: str) -> None:
    assert transaction_control(sql) is None


def test_the_refusal_names_the_statement_and_what_to_do_instead() -> None:
    reason = refusal("INSERT INTO t VALUES (1); COMMIT; BEGIN")
    assert reason is not None
    assert reason.startswith("COMMIT inside a @transaction function")
    assert "nothing was sent" in reason and "SAVEPOINT" in reason
