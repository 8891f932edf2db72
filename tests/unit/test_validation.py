"""The input rules of ``dbos_trio._core.validate``, and the Config rules built on them.

Pure unit tests, no database. Proven here: every rule function returns what it accepts
(normalized as documented: seconds and numbers as ``float``, a list for ``texts``) and
refuses everything else with the documented class — :class:`DBOSInvalidArgumentError`
(a ``ValueError``) for a value out of bounds, :class:`DBOSArgumentTypeError` (a
``TypeError`` and a ``ValueError``) for one of the wrong type, both ``DBOSException``
subclasses exported from ``dbos_trio`` — with a message that starts with the argument's
name and states the rule. The boundaries are exact: 600 UTF-8 bytes (counted in bytes,
not characters), ``MAX_SECONDS`` inclusive, integer bounds inclusive.

The Config part covers what ``tests/unit/test_config.py`` does not: the app-name pattern
matches the whole string (a trailing newline is refused), and the identity fields refuse
NUL, lone surrogates and oversized values when ``Config(...)`` is constructed, not at
launch.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import pytest

import dbos_trio
from dbos_trio import (
    Config,
    DBOSArgumentTypeError,
    DBOSConfigError,
    DBOSException,
    DBOSInvalidArgumentError,
)
from dbos_trio._core import validate
from dbos_trio._core.validate import MAX_SECONDS, MAX_TEXT_BYTES

ARG = "my_argument"


def refused(
    kind: type[DBOSException], call: Callable[[], object], *rule: str, argument: str = ARG
) -> DBOSException:
    """Run ``call``; it must raise exactly ``kind`` with a message starting with
    ``argument`` and containing each of ``rule``. Returns the error."""
    with pytest.raises(DBOSException) as raised:
        call()
    error = raised.value
    assert type(error) is kind, f"{type(error).__name__}: {error}"
    assert error.message.startswith(argument), error.message
    for part in rule:
        assert part in error.message, (part, error.message)
    assert str(error) == f"DBOS Error: {error.message}"
    return error


# --------------------------------------------------------------------- the error classes


def test_the_two_error_classes_are_exported_and_have_the_documented_bases() -> None:
    assert dbos_trio.DBOSInvalidArgumentError is DBOSInvalidArgumentError
    assert dbos_trio.DBOSArgumentTypeError is DBOSArgumentTypeError
    assert {"DBOSInvalidArgumentError", "DBOSArgumentTypeError"} <= set(dbos_trio.__all__)

    invalid = DBOSInvalidArgumentError("x must be > 0")
    assert isinstance(invalid, DBOSException)
    assert isinstance(invalid, ValueError)
    assert not isinstance(invalid, TypeError)

    wrong_type = DBOSArgumentTypeError("x must be a str, not int (1)")
    assert isinstance(wrong_type, DBOSException)
    assert isinstance(wrong_type, TypeError)
    assert isinstance(wrong_type, ValueError)


@pytest.mark.parametrize("kind", [DBOSInvalidArgumentError, DBOSArgumentTypeError])
def test_a_validation_error_pickles_to_an_equal_error(kind: type[DBOSException]) -> None:
    # A bad value inside a workflow body is recorded as the workflow's error: it must come
    # back from storage as the same class with the same message.
    error = kind("topic must not contain a NUL character (\\x00)")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is kind
    assert back.message == error.message
    assert str(back) == str(error)
    assert back.args == (error.message,)


# -------------------------------------------------------------------------------- text


@pytest.mark.parametrize(
    "value",
    [
        "a",
        " ",  # blank is a rule of some callers (SetWorkflowID), not of text()
        "x" * MAX_TEXT_BYTES,
        "€" * 200,  # 3 bytes each: exactly 600
        "\U0001f600" * 150,  # 4 bytes each: exactly 600
        "é" * 300,  # 2 bytes each: exactly 600
        "tab\tnewline\nquote'\"",
    ],
)
def test_text_returns_a_storable_string_unchanged(value: str) -> None:
    assert validate.text(value, ARG) is value
    assert validate.optional_text(value, ARG) is value


def test_text_counts_utf8_bytes_not_characters() -> None:
    refused(DBOSInvalidArgumentError, lambda: validate.text("x" * 601, ARG), "601 bytes", "600")
    refused(DBOSInvalidArgumentError, lambda: validate.text("€" * 201, ARG), "603 bytes", "600")
    refused(
        DBOSInvalidArgumentError, lambda: validate.text("é" * 300 + "a", ARG), "601 bytes", "600"
    )
    # 200 characters, 800 bytes: far fewer characters than the limit, still refused.
    refused(DBOSInvalidArgumentError, lambda: validate.text("\U0001f600" * 200, ARG), "800 bytes")


def test_text_max_bytes_can_be_lowered_and_raised() -> None:
    assert validate.text("abcd", ARG, max_bytes=4) == "abcd"
    refused(DBOSInvalidArgumentError, lambda: validate.text("abcde", ARG, max_bytes=4), "5 bytes")
    assert validate.text("x" * 700, ARG, max_bytes=700) == "x" * 700
    assert validate.optional_text("x" * 700, ARG, max_bytes=700) == "x" * 700
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.optional_text("abcde", ARG, max_bytes=4),
        "at most 4",
    )


def test_text_max_chars_counts_characters_on_top_of_the_byte_limit() -> None:
    assert validate.MAX_NAME_CHARS == 255
    limit = validate.MAX_NAME_CHARS
    assert validate.text("c" * 255, ARG, max_chars=limit) == "c" * 255
    assert validate.text("€" * 200, ARG, max_chars=limit) == "€" * 200  # 200 chars, 600 bytes
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.text("c" * 256, ARG, max_chars=limit),
        "256 characters",
        "at most 255",
        "VARCHAR",
    )
    # Both limits hold: 255 characters of 4 bytes are 1020 bytes, over the byte limit.
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.text("\U0001f600" * 255, ARG, max_chars=limit),
        "1020 bytes",
    )
    assert validate.optional_text(None, ARG, max_chars=limit) is None
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.optional_text("c" * 256, ARG, max_chars=limit),
        "256 characters",
    )


def test_text_refuses_the_empty_string() -> None:
    refused(DBOSInvalidArgumentError, lambda: validate.text("", ARG), "non-empty")
    refused(DBOSInvalidArgumentError, lambda: validate.optional_text("", ARG), "non-empty")


@pytest.mark.parametrize("value", ["\x00", "a\x00b", "abc\x00", "\x00" * 601, "€\x00"])
def test_text_refuses_a_nul_character(value: str) -> None:
    # Checked before the size: a 601-byte string of NULs is refused for its NUL.
    refused(DBOSInvalidArgumentError, lambda: validate.text(value, ARG), "NUL")


@pytest.mark.parametrize("value", ["\ud800", "a\udfffb", "\udc80", "\ud83d", "\ude00x"])
def test_text_refuses_a_lone_surrogate(value: str) -> None:
    error = refused(DBOSInvalidArgumentError, lambda: validate.text(value, ARG), "lone surrogate")
    assert error.__cause__ is None  # the UnicodeEncodeError is not chained (suppressed)
    assert error.__suppress_context__


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (None, "NoneType"),
        (1, "int"),
        (1.5, "float"),
        (True, "bool"),
        (b"abc", "bytes"),
        (bytearray(b"abc"), "bytearray"),
        (["a"], "list"),
        (("a",), "tuple"),
        (object(), "object"),
    ],
)
def test_text_refuses_what_is_not_a_str(value: Any, type_name: str) -> None:
    refused(DBOSArgumentTypeError, lambda: validate.text(value, ARG), "must be a str", type_name)


def test_optional_text_takes_none_and_refuses_other_non_strings() -> None:
    assert validate.optional_text(None, ARG) is None
    refused(DBOSArgumentTypeError, lambda: validate.optional_text(0, ARG), "must be a str", "int")
    refused(DBOSInvalidArgumentError, lambda: validate.optional_text("a\x00", ARG), "NUL")
    refused(DBOSInvalidArgumentError, lambda: validate.optional_text("\ud800", ARG), "surrogate")


def test_a_long_refused_value_is_shown_cut_short() -> None:
    error = refused(DBOSArgumentTypeError, lambda: validate.text(list(range(1000)), ARG), "list")
    assert "..." in error.message
    assert len(error.message) < 150


# ------------------------------------------------------------------------------- texts


def _generated() -> Iterator[str]:
    yield "a"
    yield "b"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        (("a", "b"), ["a", "b"]),
        (_generated(), ["a", "b"]),
        ([], []),
        (["€" * 200], ["€" * 200]),
    ],
)
def test_texts_returns_a_list_of_the_strings(value: Any, expected: list[str]) -> None:
    result = validate.texts(value, ARG)
    assert type(result) is list
    assert result == expected


@pytest.mark.parametrize("value", ["abc", "a", b"abc", 5, None, 1.5])
def test_texts_refuses_a_single_string_or_a_non_iterable(value: Any) -> None:
    # "abc" must never be taken for the three ids 'a', 'b' and 'c'.
    refused(
        DBOSArgumentTypeError,
        lambda: validate.texts(value, ARG),
        "must be a list of str",
        type(value).__name__,
    )


@pytest.mark.parametrize(
    ("items", "kind", "rule"),
    [
        (["ok", 1], DBOSArgumentTypeError, "must be a str"),
        (["ok", ""], DBOSInvalidArgumentError, "non-empty"),
        (["ok", "a\x00"], DBOSInvalidArgumentError, "NUL"),
        (["ok", "\ud800"], DBOSInvalidArgumentError, "lone surrogate"),
        (["ok", "x" * 601], DBOSInvalidArgumentError, "601 bytes"),
    ],
)
def test_texts_names_the_index_of_the_bad_item(
    items: list[Any], kind: type[DBOSException], rule: str
) -> None:
    refused(kind, lambda: validate.texts(items, ARG), rule, argument=f"{ARG}[1]")


# ------------------------------------------------------------------------------ number


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0.0), (1, 1.0), (-3, -3.0), (2.5, 2.5), (math.inf, math.inf), (-math.inf, -math.inf)],
)
def test_number_returns_a_float(value: float, expected: float) -> None:
    result = validate.number(value, ARG)
    assert type(result) is float
    assert result == expected


@pytest.mark.parametrize("value", [True, False, "1", None, b"1", Fraction(1, 2), [1], 1j])
def test_number_refuses_bools_and_non_numbers(value: Any) -> None:
    refused(
        DBOSArgumentTypeError,
        lambda: validate.number(value, ARG),
        "must be a number",
        type(value).__name__,
    )


@pytest.mark.parametrize("value", [math.nan, -math.nan, float("nan")])
def test_number_refuses_nan(value: float) -> None:
    refused(DBOSInvalidArgumentError, lambda: validate.number(value, ARG), "NaN")


# ----------------------------------------------------------------------------- seconds


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 0.0), (1, 1.0), (0.25, 0.25), (MAX_SECONDS, 1e9), (10**9, 1e9)]
)
def test_seconds_returns_a_float_within_bounds(value: float, expected: float) -> None:
    result = validate.seconds(value, ARG)
    assert type(result) is float
    assert result == expected
    assert validate.optional_seconds(value, ARG) == expected


def test_seconds_is_at_most_max_seconds_inclusive() -> None:
    assert MAX_SECONDS == 1e9
    assert validate.seconds(1e9, ARG) == 1e9
    refused(DBOSInvalidArgumentError, lambda: validate.seconds(1e9 + 1, ARG), "at most 1e+09")
    refused(DBOSInvalidArgumentError, lambda: validate.seconds(10**9 + 1, ARG), "at most 1e+09")
    refused(DBOSInvalidArgumentError, lambda: validate.seconds(1e300, ARG), "at most 1e+09")


def test_seconds_refuses_negatives_and_with_positive_zero() -> None:
    refused(DBOSInvalidArgumentError, lambda: validate.seconds(-1, ARG), ">= 0", "-1")
    refused(DBOSInvalidArgumentError, lambda: validate.seconds(-1e-9, ARG), ">= 0")
    refused(DBOSInvalidArgumentError, lambda: validate.seconds(0, ARG, positive=True), "> 0")
    refused(DBOSInvalidArgumentError, lambda: validate.seconds(-1, ARG, positive=True), "> 0")
    assert validate.seconds(1e-9, ARG, positive=True) == 1e-9


def test_seconds_refuses_infinity_unless_forever_is_allowed() -> None:
    refused(DBOSInvalidArgumentError, lambda: validate.seconds(math.inf, ARG), "at most")
    assert validate.seconds(math.inf, ARG, forever_allowed=True) == math.inf
    assert validate.optional_seconds(math.inf, ARG, forever_allowed=True) == math.inf
    # forever is not "anything goes": a finite value still has its ceiling, and -inf is
    # never a duration.
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.seconds(1e9 + 1, ARG, forever_allowed=True),
        "at most",
    )
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.seconds(-math.inf, ARG, forever_allowed=True),
        ">= 0",
    )
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.seconds(math.nan, ARG, forever_allowed=True),
        "NaN",
    )


@pytest.mark.parametrize(
    ("value", "kind", "rule"),
    [
        (math.nan, DBOSInvalidArgumentError, "NaN"),
        (-math.inf, DBOSInvalidArgumentError, ">= 0"),
        (math.inf, DBOSInvalidArgumentError, "at most"),
        (True, DBOSArgumentTypeError, "must be a number"),
        ("1", DBOSArgumentTypeError, "must be a number"),
        (None, DBOSArgumentTypeError, "must be a number"),
    ],
)
def test_seconds_refuses_non_durations(value: Any, kind: type[DBOSException], rule: str) -> None:
    refused(kind, lambda: validate.seconds(value, ARG), rule)


def test_optional_seconds_takes_none_and_passes_its_options_on() -> None:
    assert validate.optional_seconds(None, ARG) is None
    assert validate.optional_seconds(None, ARG, positive=True, forever_allowed=True) is None
    refused(DBOSInvalidArgumentError, lambda: validate.optional_seconds(0, ARG, positive=True))
    refused(DBOSInvalidArgumentError, lambda: validate.optional_seconds(math.inf, ARG), "at most")
    refused(DBOSInvalidArgumentError, lambda: validate.optional_seconds(math.nan, ARG), "NaN")
    refused(DBOSArgumentTypeError, lambda: validate.optional_seconds("5", ARG), "number")


# ----------------------------------------------------------------------------- integer


def test_integer_returns_an_int_within_inclusive_bounds() -> None:
    assert validate.integer(5, ARG) == 5
    assert validate.integer(-(2**80), ARG) == -(2**80)
    assert validate.integer(1, ARG, low=1, high=10) == 1
    assert validate.integer(10, ARG, low=1, high=10) == 10
    assert validate.integer(validate.INT32_MAX, ARG, high=validate.INT32_MAX) == 2**31 - 1
    assert validate.optional_integer(None, ARG, low=1) is None
    assert validate.optional_integer(3, ARG, low=1) == 3


@pytest.mark.parametrize(
    ("value", "low", "high", "rule"),
    [
        (0, 1, 10, "between 1 and 10, not 0"),
        (11, 1, 10, "between 1 and 10, not 11"),
        (-1, 0, None, "at least 0, not -1"),
        (-5, 0, None, "at least 0, not -5"),
        (4, None, 3, "at most 3, not 4"),
        (2**31, 1, 2**31 - 1, "between 1 and 2147483647"),
    ],
)
def test_integer_refuses_a_value_out_of_bounds(
    value: int, low: int | None, high: int | None, rule: str
) -> None:
    refused(
        DBOSInvalidArgumentError, lambda: validate.integer(value, ARG, low=low, high=high), rule
    )
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.optional_integer(value, ARG, low=low, high=high),
        rule,
    )


@pytest.mark.parametrize("value", [True, False, 1.0, 5.5, math.nan, "5", b"5", [5], Fraction(5)])
def test_integer_refuses_bools_floats_and_strings(value: Any) -> None:
    refused(
        DBOSArgumentTypeError,
        lambda: validate.integer(value, ARG, low=0),
        "must be an int",
        type(value).__name__,
    )
    refused(DBOSArgumentTypeError, lambda: validate.optional_integer(value, ARG), "must be an int")


# ----------------------------------------------------------------------- boolean, choice


def test_boolean_accepts_only_true_and_false() -> None:
    assert validate.boolean(True, ARG) is True
    assert validate.boolean(False, ARG) is False


@pytest.mark.parametrize("value", [1, 0, "true", "False", None, [], 1.0])
def test_boolean_refuses_truthy_and_falsy_non_bools(value: Any) -> None:
    refused(
        DBOSArgumentTypeError,
        lambda: validate.boolean(value, ARG),
        "must be True or False",
        type(value).__name__,
    )


def test_choice_returns_an_allowed_value() -> None:
    assert validate.choice("PENDING", ARG, ["PENDING", "SUCCESS"]) == "PENDING"
    assert validate.choice(2, ARG, iter([1, 2, 3])) == 2  # any iterable, read once
    assert validate.choice(None, ARG, [None, "x"]) is None


@pytest.mark.parametrize("value", ["BOGUS", "pending", "", None, 1])
def test_choice_refuses_anything_else_listing_the_options(value: Any) -> None:
    refused(
        DBOSInvalidArgumentError,
        lambda: validate.choice(value, ARG, ["PENDING", "SUCCESS"]),
        "must be one of 'PENDING', 'SUCCESS'",
        repr(value),
    )


# ------------------------------------------------------------------------ Config rules


@pytest.mark.parametrize("name", ["abc\n", "\nabc", "abc\r\n", "ab\nc", "abc ", "abc\x00"])
def test_the_app_name_pattern_matches_the_whole_name(name: str) -> None:
    # "abc\n" passed a `$`-anchored pattern; fullmatch refuses it.
    with pytest.raises(DBOSConfigError, match=r"Config\.app_name") as raised:
        Config(app_name=name)
    assert "lowercase letters" in str(raised.value)


BAD_IDENTITY_TEXT: list[tuple[str, str]] = [
    ("a\x00b", "NUL"),
    ("\x00", "NUL"),
    ("v\ud800", "lone surrogate"),
    ("x" * 601, "601 bytes"),
    ("€" * 201, "603 bytes"),
]


@pytest.mark.parametrize("field", ["app_version", "executor_id"])
@pytest.mark.parametrize(("value", "rule"), BAD_IDENTITY_TEXT)
def test_identity_text_the_database_cannot_store_fails_at_construction(
    field: str, value: str, rule: str
) -> None:
    # Refused by Config(...) itself: no launch, no version row written, no connection.
    with pytest.raises(DBOSConfigError, match=rf"Config\.{field}\b") as raised:
        Config(app_name="app", **{field: value})
    assert rule in str(raised.value)


@pytest.mark.parametrize("field", ["app_version", "executor_id"])
@pytest.mark.parametrize("value", ["x" * 600, "€" * 200, "v1.2.3+build 7"])
def test_identity_text_up_to_the_limit_is_kept(field: str, value: str) -> None:
    assert getattr(Config(app_name="app", **{field: value}), field) == value


@pytest.mark.parametrize(
    ("names", "rule"),
    [
        (["ok", "a\x00"], "NUL"),
        (["\ud800"], "lone surrogate"),
        (["q" * 601], "601 bytes"),
        ([None], "not a queue name"),
    ],
)
def test_listen_queues_refuses_names_the_database_cannot_store(names: list[Any], rule: str) -> None:
    with pytest.raises(DBOSConfigError, match=r"Config\.listen_queues") as raised:
        Config(app_name="app", listen_queues=names)
    assert rule in str(raised.value)


@pytest.mark.parametrize(
    ("url", "rule"),
    [("postgresql://u@h/db\x00", "NUL"), ("postgresql://u@h/\ud800", "lone surrogate")],
)
def test_a_database_url_the_driver_cannot_take_fails_at_construction(url: str, rule: str) -> None:
    with pytest.raises(DBOSConfigError, match=r"Config\.database_url") as raised:
        Config(app_name="app", database_url=url)
    assert rule in str(raised.value)
