"""Errors can be caught by family, keep their dbos 3.4 codes and messages, and the two
control-flow errors are the engine's alone.

A family parent (``DBOSTimeoutError``, ``DBOSDuplicateIDError``, ...) lets a caller
handle a kind of trouble with one ``except``; adding the parents must not change what a
member says or which builtin errors it also is, since code written for dbos 3.4 compares
codes and catches ``ValueError``. ``DBOSWorkflowCancelledError`` and
``DBOSWorkflowConflictIDError`` cannot be built by user code (calling the class raises
``TypeError``), yet still pickle and unpickle, because the payload format stores errors.
The database kinds a caller can meet are public, and rows pickled under their old
private paths still decode. The last test has the database itself refuse a value.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

import dbos_trio
import dbos_trio.errors as errors
from dbos_trio import DBOS, PickleSerializer, SetWorkflowID
from dbos_trio._core import validate

FAMILIES: dict[type[BaseException], list[BaseException]] = {
    errors.DBOSInvalidArgumentError: [
        errors.DBOSInvalidArgumentError("workflow_id must not be blank"),
        errors.DBOSArgumentTypeError("timeout must be a number"),
        errors.InvalidValueError("system database error: index row too big"),
    ],
    errors.DBOSTimeoutError: [
        errors.DBOSStepTimeoutError("charge", 1.5),
        errors.DBOSStreamTimeoutError("wf-1", "prices", 2.0),
        errors.DBOSQueryTimeoutError("canceling statement due to statement timeout"),
    ],
    errors.DBOSDuplicateIDError: [
        errors.DBOSConflictingWorkflowError("wf-1", "another function"),
        errors.DBOSWorkflowIDInUseError("wf-1"),
        errors.DBOSQueueDeduplicatedError("wf-2", "orders", "dedup-1"),
    ],
    errors.DBOSNondeterminismError: [
        errors.DBOSUnexpectedStepError("wf-1", 3, "charge", "refund"),
        errors.DBOSStepNondeterminismError("wf-1", 3),
        errors.DBOSUnorderedTaskError("wf-1", "dbos.sleep()"),
    ],
    errors.DBOSStoredDataError: [
        errors.DBOSPayloadError("the output of wf-1", "py_pickle", "refused"),
        errors.DBOSCorruptRowError("wf-1", "status", "'WEIRD' is not a status"),
    ],
    errors.DBOSAwaitedWorkflowError: [
        errors.DBOSAwaitedWorkflowCancelledError("wf-1"),
        errors.DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded("wf-1"),
    ],
    errors.SystemDatabaseError: [
        errors.ConnectionLost("system database error: server closed the connection"),
        errors.Contention("system database error: deadlock detected"),
        errors.DatabaseClosed("system database error: the pool is closed"),
        errors.UnexpectedDatabaseError("system database error: relation does not exist"),
        errors.DBOSQueryTimeoutError("canceling statement due to statement timeout"),
    ],
    errors.TransientDatabaseError: [
        errors.ConnectionLost("system database error: server closed the connection"),
        errors.Contention("system database error: deadlock detected"),
    ],
    errors.DBOSInitializationError: [
        errors.DBOSConfigError("app_name must match ^[a-z0-9-_]+$"),
        errors.SystemDatabaseUnreachable("cannot connect to the system database"),
    ],
}


@pytest.mark.parametrize("family", list(FAMILIES), ids=lambda family: family.__name__)
def test_an_except_of_a_family_catches_each_of_its_members(family: type[BaseException]) -> None:
    for member in FAMILIES[family]:
        with pytest.raises(family) as caught:
            raise member
        assert caught.value is member


def test_a_family_is_public_and_catches_no_error_outside_it() -> None:
    outsiders = [
        errors.DBOSNonExistentWorkflowError("target", "wf-1"),
        errors.DBOSMaxStepRetriesExceeded("charge", 3, []),
        errors.DBOSNotLaunchedError("list_workflows"),
    ]
    for family in FAMILIES:
        assert getattr(dbos_trio, family.__name__) is family
        assert family.__name__ in errors.__all__
        assert [error for error in outsiders if isinstance(error, family)] == []


def test_the_control_flow_errors_are_in_no_exception_family() -> None:
    for cls in (errors.DBOSWorkflowCancelledError, errors.DBOSWorkflowConflictIDError):
        assert issubclass(cls, errors.DBOSBaseException)
        assert not issubclass(cls, Exception)
        assert not any(issubclass(cls, family) for family in FAMILIES)


def test_errors_that_were_value_and_type_errors_still_are() -> None:
    assert issubclass(errors.DBOSInvalidArgumentError, ValueError)
    assert issubclass(errors.DBOSArgumentTypeError, TypeError)
    assert issubclass(errors.DBOSArgumentTypeError, ValueError)
    assert issubclass(errors.DBOSPayloadError, TypeError)
    assert issubclass(errors.DBOSPayloadError, ValueError)
    assert issubclass(errors.InvalidValueError, ValueError)


def test_a_value_the_database_refuses_is_an_invalid_argument_not_a_database_failure() -> None:
    assert issubclass(errors.InvalidValueError, errors.DBOSInvalidArgumentError)
    assert not issubclass(errors.InvalidValueError, errors.SystemDatabaseError)


def test_codes_and_messages_of_dbos_3_4_classes_are_unchanged() -> None:
    samples: list[tuple[BaseException, int | None, str]] = [
        (
            errors.DBOSMaxStepRetriesExceeded("charge", 3, []),
            7,
            "DBOS Error 7: Step charge has exceeded its maximum of 3 retries",
        ),
        (
            errors.DBOSQueueDeduplicatedError("wf-2", "orders", "dedup-1"),
            12,
            "DBOS Error 12: Workflow wf-2 was deduplicated due to an existing workflow in "
            "queue orders with deduplication ID dedup-1.",
        ),
        (
            errors.DBOSStepTimeoutError("charge", 1.5),
            18,
            "DBOS Error 18: Step charge was cancelled after exceeding its timeout of 1.5 seconds",
        ),
        (
            errors.DBOSWorkflowIDInUseError(
                "wf-1", workflow_status="SUCCESS", workflow_name="checkout"
            ),
            27,
            "DBOS Error 27: Workflow ID wf-1 is already in use by workflow checkout with "
            "status SUCCESS.",
        ),
        (
            errors.DBOSUnexpectedStepError("wf-1", 3, "charge", "refund"),
            11,
            "DBOS Error 11: During execution of workflow wf-1 step 3, function refund was "
            "recorded when charge was expected. Check that your workflow is deterministic.",
        ),
        (errors.DBOSConfigError("x"), 3, "DBOS Error 3: Error initializing dbos_trio: x"),
        (errors.DBOSAwaitedWorkflowCancelledError("wf-1"), 13, None),
        (errors.DBOSStreamTimeoutError("wf-1", "prices", None), 16, None),
        (errors.DBOSStepNondeterminismError("wf-1", 3), 28, None),
        (errors.DBOSConflictingWorkflowError("wf-1", "x"), 9, None),
        (errors.DBOSAwaitedWorkflowMaxRecoveryAttemptsExceeded("wf-1"), 14, None),
        (errors.DBOSWorkflowCancelledError._create("wf-1"), 10, None),
        (errors.DBOSWorkflowConflictIDError._create("wf-1"), 1, None),
    ]
    for error, code, text in samples:
        assert getattr(error, "dbos_error_code", None) == code, type(error).__name__
        if text is not None:
            assert str(error) == text
    assert str(errors.DBOSWorkflowCancelledError._create("wf-1")) == (
        "DBOS Error 10: Workflow wf-1 was cancelled"
    )


@pytest.mark.parametrize(
    "cls",
    [errors.DBOSWorkflowCancelledError, errors.DBOSWorkflowConflictIDError],
    ids=lambda cls: cls.__name__,
)
def test_user_code_cannot_construct_a_control_flow_error(cls: type[BaseException]) -> None:
    with pytest.raises(TypeError, match="has no public constructor"):
        cls("wf-1")
    with pytest.raises(TypeError, match="has no public constructor"):
        raise cls  # a bare raise instantiates the class, and is refused the same way


@pytest.mark.parametrize(
    "cls",
    [errors.DBOSWorkflowCancelledError, errors.DBOSWorkflowConflictIDError],
    ids=lambda cls: cls.__name__,
)
def test_a_control_flow_error_survives_a_pickle_round_trip(
    cls: type[errors.DBOSWorkflowCancelledError] | type[errors.DBOSWorkflowConflictIDError],
) -> None:
    error = cls._create("wf-7")
    for back in (
        pickle.loads(pickle.dumps(error)),
        PickleSerializer().deserialize(PickleSerializer().serialize(error)),
    ):
        assert type(back) is cls
        assert back.workflow_id == "wf-7"
        assert str(back) == str(error)
        assert back.args == error.args


@contextmanager
def _defined_at(cls: type, module: str) -> Iterator[None]:
    """``cls`` pickles naming ``module``, as a row written before this change names it."""
    today = cls.__module__
    cls.__module__ = module
    try:
        yield
    finally:
        cls.__module__ = today


@pytest.mark.parametrize(
    ("cls", "old_module"),
    [
        (errors.ConnectionLost, "dbos_trio._sysdb.errors"),
        (errors.SystemDatabaseUnreachable, "dbos_trio._sysdb.errors"),
        (errors.InvalidValueError, "dbos_trio._sysdb.errors"),
        (errors.TransactionOutcomeUnknown, "dbos_trio._datasource.protocol"),
        (errors.Contention, "dbos_trio.sysdb.errors"),
    ],
    ids=lambda value: getattr(value, "__name__", value),
)
def test_a_row_naming_a_moved_class_at_its_old_path_decodes_to_the_public_class(
    cls: type[errors.DBOSException], old_module: str
) -> None:
    with _defined_at(cls, old_module):
        stored = pickle.dumps(cls("system database error: gone"))
    assert old_module.encode() in stored
    back = pickle.loads(stored)
    assert type(back) is cls
    assert back.message.endswith("system database error: gone")


def test_a_row_naming_statement_timeout_decodes_to_the_query_timeout_error() -> None:
    # StatementTimeout was a private subclass; it is now the public class itself.
    from dbos_trio._sysdb.errors import StatementTimeout

    assert StatementTimeout is errors.DBOSQueryTimeoutError
    with _defined_at(errors.DBOSQueryTimeoutError, "dbos_trio._sysdb.errors"):
        original_name = errors.DBOSQueryTimeoutError.__qualname__
        errors.DBOSQueryTimeoutError.__qualname__ = "StatementTimeout"
        try:
            stored = pickle.dumps(errors.DBOSQueryTimeoutError("statement timeout"))
        finally:
            errors.DBOSQueryTimeoutError.__qualname__ = original_name
    assert b"StatementTimeout" in stored
    assert type(pickle.loads(stored)) is errors.DBOSQueryTimeoutError


def test_every_public_error_reports_a_public_module() -> None:
    for name in errors.__all__:
        value = getattr(errors, name)
        assert value.__module__ in {"dbos_trio", "dbos_trio.errors"}, name
        assert getattr(dbos_trio, name) is value


async def test_a_value_the_database_refuses_is_caught_as_an_invalid_argument(
    make_dbos: Callable[..., DBOS], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The public calls refuse a lone surrogate themselves; switched off here, so that the
    # database driver's own refusal is what the caller meets.
    monkeypatch.setattr(validate, "text", lambda value, *_args, **_kwargs: value)
    dbos = make_dbos()

    @dbos.workflow()
    async def publisher() -> None:
        await dbos.set_event("lone\ud800surrogate", "value")

    async with dbos.launched():
        with (
            SetWorkflowID("refused-key"),
            pytest.raises(dbos_trio.DBOSInvalidArgumentError) as raised,
        ):
            await publisher()
        assert type(raised.value) is dbos_trio.InvalidValueError
        handle = await dbos.retrieve_workflow("refused-key")
        with pytest.raises(dbos_trio.DBOSInvalidArgumentError):
            await handle.get_result()
        assert (await handle.get_status()).status == "ERROR"
