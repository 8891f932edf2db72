"""How the CLI classifies and prints a failure: pure, nothing runs a command."""

from __future__ import annotations

import pytest

from dbos_trio import DBOSException, DBOSNonExistentWorkflowError
from dbos_trio._redact import Scrubber
from dbos_trio._sysdb.errors import (
    ConnectionLost,
    DatabaseClosed,
    InvalidValueError,
    SystemDatabaseUnreachable,
    UnexpectedDatabaseError,
)
from dbos_trio.cli._errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    UsageError,
    describe,
    exit_code_for,
    one_line,
    unwrap,
)
from dbos_trio.errors import DBOSConfigError, DBOSInitializationError, DBOSInvalidArgumentError


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (DBOSNonExistentWorkflowError("target", "nope"), EXIT_NOT_FOUND),
        (SystemDatabaseUnreachable("cannot connect"), EXIT_UNREACHABLE),
        (ConnectionLost("system database error: gone"), EXIT_UNREACHABLE),
        (DatabaseClosed("closed"), EXIT_UNREACHABLE),
        (UsageError("no database"), EXIT_USAGE),
        (DBOSInvalidArgumentError("limit must be >= 0"), EXIT_USAGE),
        (InvalidValueError("too long"), EXIT_USAGE),
        (DBOSConfigError("Client database_url: bad"), EXIT_USAGE),
        (ValueError("bad"), EXIT_USAGE),
        (DBOSInitializationError("schema not migrated"), EXIT_ERROR),
        (UnexpectedDatabaseError("relation does not exist"), EXIT_ERROR),
        (DBOSException("anything else"), EXIT_ERROR),
        (RuntimeError("a bug"), EXIT_ERROR),
        (KeyboardInterrupt(), EXIT_INTERRUPTED),
    ],
)
def test_each_kind_of_failure_has_its_exit_code(error: BaseException, code: int) -> None:
    assert exit_code_for(error) == code
    # Trio nurseries wrap what they raise; nested single-exception groups are unwrapped.
    wrapped = BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [error])])
    assert exit_code_for(wrapped) == code


def test_a_group_of_several_errors_is_not_unwrapped_and_is_described_whole() -> None:
    group = ExceptionGroup("two", [ValueError("first"), RuntimeError("second")])

    assert unwrap(group) is group
    assert exit_code_for(group) == EXIT_ERROR
    assert describe(group) == "first; RuntimeError: second"


def test_the_line_is_one_line_scrubbed_and_prefixed() -> None:
    scrub = Scrubber.for_urls("postgresql://u:S3cret-PW@h/db")
    error = SystemDatabaseUnreachable(
        "connection failed: S3cret-PW refused\n\tIs the server running on that host?"
    )

    assert one_line(ExceptionGroup("g", [error]), scrub) == (
        "dbos-trio: error: database unreachable: connection failed: *** refused "
        "Is the server running on that host?"
    )


def test_a_missing_workflow_names_its_id() -> None:
    assert describe(DBOSNonExistentWorkflowError("target", "w-1")) == "workflow 'w-1' not found"
