"""Payload formats: py_pickle, portable_json (the cross-SDK wire format), custom serializers,
and errors stored as outcomes. Pure unit tests."""

from __future__ import annotations

import base64
import json
import pickle
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dbos_trio import (
    DBOSAwaitedWorkflowCancelledError,
    DBOSConfigError,
    DBOSException,
    DBOSMaxStepRetriesExceeded,
    DBOSNonExistentWorkflowError,
    DBOSNotLaunchedError,
    DBOSUnexpectedStepError,
    DBOSWorkflowCancelledError,
    PickleSerializer,
    PortableJSONSerializer,
    PortableWorkflowError,
)
from dbos_trio._serialization import PICKLE, PORTABLE_JSON, Codec, to_portable

PORTABLE = PortableJSONSerializer()
PICKLER = PickleSerializer()


# ------------------------------------------------------------------------------ pickle


class Point:
    """A user type: pickled by reference to this module."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self) -> int:
        return hash((self.x, self.y))


def test_the_pickle_format_is_base64_of_a_pickle_named_py_pickle() -> None:
    value = {"a": (1, 2), "b": {3}}
    text = PICKLER.serialize(value)

    assert PICKLER.name() == "py_pickle" == PICKLE
    assert text.isascii()
    assert pickle.loads(base64.b64decode(text)) == value


def test_pickle_round_trips_python_values_exactly() -> None:
    value = {
        "when": datetime(2025, 6, 15, 10, 30, 0, 123456, tzinfo=UTC),
        "day": date(2025, 6, 15),
        "amount": Decimal("12.50"),
        "tags": {"a", "b"},
        "pair": (1, "x"),
        "point": Point(1, 2),
        "nested": [{"deep": [None, True, 1.5]}],
        b"bytes-key": b"\x00\xff",
    }

    assert PICKLER.deserialize(PICKLER.serialize(value)) == value


PICKLABLE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | st.datetimes()
    | st.decimals(allow_nan=False),
    lambda children: (
        st.lists(children)
        | st.tuples(children, children)
        | st.dictionaries(st.text() | st.integers(), children)
    ),
    max_leaves=20,
)


@given(PICKLABLE)
def test_any_picklable_value_round_trips_through_py_pickle(value: Any) -> None:
    assert PICKLER.deserialize(PICKLER.serialize(value)) == value


# ------------------------------------------------------------------------ portable JSON


def test_a_datetime_is_written_as_rfc3339_utc_with_milliseconds_and_z() -> None:
    moment = datetime(2025, 6, 15, 10, 30, tzinfo=UTC)

    assert PORTABLE.serialize(moment) == '"2025-06-15T10:30:00.000Z"'


def test_a_datetime_in_another_zone_is_converted_to_utc_keeping_its_microseconds() -> None:
    # Milliseconds (dbos 3.4's form) unless the value has more: then all six digits, which
    # every ISO parser reads, so a replay sees the value the first run was given.
    paris_summer = timezone(timedelta(hours=2))
    moment = datetime(2025, 6, 15, 12, 30, 0, 987654, tzinfo=paris_summer)

    assert to_portable(moment) == "2025-06-15T10:30:00.987654Z"
    assert to_portable(moment.replace(microsecond=987000)) == "2025-06-15T10:30:00.987Z"


def test_a_naive_datetime_is_read_as_utc() -> None:
    assert to_portable(datetime(2025, 1, 2, 3, 4, 5)) == "2025-01-02T03:04:05.000Z"


def test_dates_decimals_sets_and_tuples_become_json_every_sdk_reads() -> None:
    assert to_portable(date(2025, 6, 15)) == "2025-06-15"
    assert to_portable(Decimal("12.50")) == "12.50"
    assert to_portable(Decimal("1E+3")) == "1000"
    assert to_portable(Decimal("-0.000001")) == "-0.000001"
    assert to_portable((1, "a")) == [1, "a"]
    assert to_portable(frozenset({7})) == [7]
    assert sorted(to_portable({3, 1, 2})) == [1, 2, 3]


def test_portable_json_is_compact_and_keeps_unicode() -> None:
    text = PORTABLE.serialize({"a": [1, 2], "name": "Zoë ✓"})

    assert text == '{"a":[1,2],"name":"Zoë ✓"}'


def test_nested_values_are_converted_all_the_way_down() -> None:
    value = {
        "orders": [
            {"at": datetime(2025, 6, 15, tzinfo=UTC), "total": Decimal("9.99"), "ids": (1, 2)},
        ],
        "flags": {"seen": True, "none": None},
    }

    assert json.loads(PORTABLE.serialize(value)) == {
        "orders": [{"at": "2025-06-15T00:00:00.000Z", "total": "9.99", "ids": [1, 2]}],
        "flags": {"seen": True, "none": None},
    }


def test_a_map_with_a_non_string_key_cannot_be_portable() -> None:
    with pytest.raises(TypeError, match="string keys"):
        PORTABLE.serialize({1: "one"})


def test_an_arbitrary_object_cannot_be_portable() -> None:
    with pytest.raises(TypeError, match="Point"):
        PORTABLE.serialize({"p": Point(1, 2)})


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=25,
)


@given(JSON_VALUES)
def test_any_json_value_round_trips_through_portable_json(value: Any) -> None:
    text = PORTABLE.serialize(value)

    assert PORTABLE.deserialize(text) == value
    assert json.loads(text) == value


# ----------------------------------------------------------------- workflow inputs


INTEROP_ARGS = (
    "hello-interop",
    42,
    datetime(2025, 6, 15, 10, 30, tzinfo=UTC),
    ["alpha", "beta", "gamma"],
    {"key1": "value1", "key2": 99, "nested": {"deep": True}},
    True,
    None,
)


def test_portable_inputs_without_keyword_arguments_are_the_minimal_cross_sdk_envelope() -> None:
    text = Codec(PICKLER).encode_inputs(INTEROP_ARGS, {}, PORTABLE_JSON)

    assert text == (
        '{"positionalArgs":["hello-interop",42,"2025-06-15T10:30:00.000Z",'
        '["alpha","beta","gamma"],{"key1":"value1","key2":99,"nested":{"deep":true}},'
        "true,null]}"
    )


def test_portable_inputs_with_keyword_arguments_carry_named_args() -> None:
    codec = Codec(PICKLER)
    text = codec.encode_inputs((1,), {"who": "ann"}, PORTABLE_JSON)

    assert json.loads(text) == {"positionalArgs": [1], "namedArgs": {"who": "ann"}}
    assert codec.decode_inputs(text, PORTABLE_JSON) == ((1,), {"who": "ann"})


def test_portable_inputs_written_by_another_sdk_may_omit_either_half() -> None:
    codec = Codec(PICKLER)

    assert codec.decode_inputs('{"namedArgs":{"a":1}}', PORTABLE_JSON) == ((), {"a": 1})
    assert codec.decode_inputs('{"positionalArgs":[1,2]}', PORTABLE_JSON) == ((1, 2), {})
    assert codec.decode_inputs("{}", PORTABLE_JSON) == ((), {})


def test_portable_inputs_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(TypeError, match="object"):
        Codec(PICKLER).decode_inputs("[1, 2]", PORTABLE_JSON)


def test_pickled_inputs_are_the_args_and_kwargs_dict_of_the_python_sdk() -> None:
    codec = Codec(PICKLER)
    text = codec.encode_inputs((1, Point(2, 3)), {"k": "v"}, PICKLE)

    assert PICKLER.deserialize(text) == {"args": (1, Point(2, 3)), "kwargs": {"k": "v"}}
    assert codec.decode_inputs(text, PICKLE) == ((1, Point(2, 3)), {"k": "v"})


@given(st.lists(JSON_VALUES, max_size=4), st.dictionaries(st.text(), JSON_VALUES, max_size=3))
def test_portable_inputs_round_trip(args: list[Any], kwargs: dict[str, Any]) -> None:
    codec = Codec(PICKLER)
    text = codec.encode_inputs(tuple(args), kwargs, PORTABLE_JSON)

    assert codec.decode_inputs(text, PORTABLE_JSON) == (tuple(args), kwargs)
    assert ("namedArgs" in json.loads(text)) == bool(kwargs)


def test_absent_payloads_decode_to_none_and_no_inputs() -> None:
    codec = Codec(PICKLER)

    assert codec.decode(None, PICKLE) is None
    assert codec.decode(None, "anything") is None
    assert codec.decode_inputs(None, PORTABLE_JSON) == ((), {})


# ---------------------------------------------------------------------------- errors


class PaymentDeclined(Exception):
    def __init__(self, message: str, code: int, data: dict[str, Any]) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def test_an_error_stored_as_portable_json_reads_back_as_a_portable_workflow_error() -> None:
    codec = Codec(PICKLER)
    text = codec.encode_error(ValueError("boom"), PORTABLE_JSON)

    assert json.loads(text) == {"name": "ValueError", "message": "boom", "code": None}
    error = codec.decode_error(text, PORTABLE_JSON)
    assert isinstance(error, PortableWorkflowError)
    assert (error.name, error.message, error.code, error.data) == ("ValueError", "boom", None, None)
    assert str(error) == "boom"


def test_a_portable_error_keeps_its_code_and_data() -> None:
    codec = Codec(PICKLER)
    declined = PaymentDeclined("card declined", 402, {"at": datetime(2025, 6, 15, tzinfo=UTC)})
    text = codec.encode_error(declined, PORTABLE_JSON)

    assert json.loads(text) == {
        "name": "PaymentDeclined",
        "message": "card declined",
        "code": 402,
        "data": {"at": "2025-06-15T00:00:00.000Z"},
    }
    error = codec.decode_error(text, PORTABLE_JSON)
    assert isinstance(error, PortableWorkflowError)
    assert (error.name, error.code, error.data) == (
        "PaymentDeclined",
        402,
        {"at": "2025-06-15T00:00:00.000Z"},
    )


def test_a_portable_workflow_error_round_trips_unchanged() -> None:
    codec = Codec(PICKLER)
    original = PortableWorkflowError("nope", "TSError", "E42", {"k": [1]})
    error = codec.decode_error(codec.encode_error(original, PORTABLE_JSON), PORTABLE_JSON)

    assert isinstance(error, PortableWorkflowError)
    assert (error.message, error.name, error.code, error.data) == (
        "nope",
        "TSError",
        "E42",
        {"k": [1]},
    )
    again = pickle.loads(pickle.dumps(original))
    assert (again.message, again.name, again.code, again.data) == (
        "nope",
        "TSError",
        "E42",
        {"k": [1]},
    )


def test_a_pickled_error_reads_back_as_the_same_exception_type() -> None:
    codec = Codec(PICKLER)
    error = codec.decode_error(codec.encode_error(KeyError("missing"), PICKLE), PICKLE)

    assert type(error) is KeyError
    assert error.args == ("missing",)


class Unpicklable(Exception):
    def __reduce__(self) -> Any:
        raise TypeError("cannot pickle this")


def test_an_unpicklable_error_is_stored_as_a_plain_exception_naming_its_type() -> None:
    codec = Codec(PICKLER)
    error = codec.decode_error(codec.encode_error(Unpicklable("bad"), PICKLE), PICKLE)

    assert type(error) is Exception
    assert str(error) == "Unpicklable: bad"


DBOS_ERRORS: list[DBOSException] = [
    DBOSNonExistentWorkflowError("target", "wf-1"),
    DBOSAwaitedWorkflowCancelledError("wf-2"),
    DBOSMaxStepRetriesExceeded("charge", 3, [ValueError("a"), ValueError("b")]),
    DBOSUnexpectedStepError("wf-3", 2, "expected", "recorded"),
    DBOSConfigError("Config.schema: bad"),
    DBOSNotLaunchedError("start_workflow"),
]


@pytest.mark.parametrize("error", DBOS_ERRORS, ids=lambda e: type(e).__name__)
def test_dbos_errors_survive_being_stored_as_an_outcome(error: DBOSException) -> None:
    codec = Codec(PICKLER)
    back = codec.decode_error(codec.encode_error(error, PICKLE), PICKLE)

    assert type(back) is type(error)
    assert str(back) == str(error)
    assert isinstance(back, DBOSException)
    assert back.dbos_error_code == error.dbos_error_code
    assert back.args == error.args
    assert {k: v for k, v in vars(back).items() if k != "errors"} == {
        k: v for k, v in vars(error).items() if k != "errors"
    }


def test_dbos_error_codes_and_messages_match_the_python_sdk() -> None:
    # The codes are the official SDK's, and so are the texts where code may match on them.
    assert str(DBOSNonExistentWorkflowError("target", "wf-1")) == (
        "DBOS Error 5: Non-existent target workflow ID: wf-1"
    )
    assert str(DBOSConfigError("x")) == "DBOS Error 3: Error initializing dbos_trio: x"
    assert DBOSAwaitedWorkflowCancelledError("wf").dbos_error_code == 13
    assert DBOSMaxStepRetriesExceeded("s", 3, []).dbos_error_code == 7
    assert DBOSConfigError("x").dbos_error_code == 3


def test_workflow_cancellation_is_control_flow_not_an_exception() -> None:
    error = DBOSWorkflowCancelledError._create("wf-9")

    assert not isinstance(error, Exception)
    assert isinstance(error, BaseException)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is DBOSWorkflowCancelledError
    assert back.workflow_id == "wf-9"


# ------------------------------------------------------------------ formats by name


class UpperJSON:
    """A custom serializer: JSON with upper-cased strings, stored as ``upper_json``."""

    def serialize(self, value: Any) -> str:
        return json.dumps(value.upper() if isinstance(value, str) else value)

    def deserialize(self, text: str) -> Any:
        return json.loads(text)

    def name(self) -> str:
        return "upper_json"


def test_a_custom_serializer_writes_under_its_own_name_and_reads_back_by_it() -> None:
    codec = Codec(UpperJSON())

    assert codec.default_format == "upper_json"
    assert codec.format_for(False) == "upper_json"
    assert codec.format_for(None) == "upper_json"
    assert codec.format_for(True) == PORTABLE_JSON
    text = codec.encode("hi")
    assert text == '"HI"'
    assert codec.decode(text, "upper_json") == "HI"


def test_the_built_in_formats_stay_readable_whatever_serializer_is_configured() -> None:
    codec = Codec(UpperJSON())

    assert codec.decode(PICKLER.serialize({"a": 1}), PICKLE) == {"a": 1}
    assert codec.decode('{"a":1}', PORTABLE_JSON) == {"a": 1}
    assert codec.encode({"x": (1,)}, PICKLE) == PICKLER.serialize({"x": (1,)})


def test_a_payload_in_a_format_this_process_does_not_know_is_refused_by_name() -> None:
    codec = Codec(PICKLER)

    with pytest.raises(TypeError, match="Serialization js_superjson is not available"):
        codec.decode('{"json":1}', "js_superjson")
    with pytest.raises(TypeError, match="upper_json"):
        codec.decode('"X"', "upper_json")
    with pytest.raises(TypeError, match="not available"):
        codec.encode(1, "DBOS_JSON")


def test_a_payload_without_a_format_name_is_read_with_the_configured_serializer() -> None:
    codec = Codec(UpperJSON())

    assert codec.decode('"legacy"', None) == "legacy"
