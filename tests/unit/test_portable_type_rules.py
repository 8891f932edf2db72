"""The portable type table (pure logic): each type's stored JSON and its reading back by
a stated type, refusals naming where, and the codec's size guard."""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import attrs
import pytest

from dbos_trio import DBOSValueTooLargeError, PortableValueError, from_portable
from dbos_trio._core.portable_types import parameter_hints, return_hint, to_portable
from dbos_trio._serialization import (
    PICKLE,
    PORTABLE_JSON,
    Codec,
    PickleSerializer,
    PortableJSONSerializer,
)


class Size(enum.IntEnum):
    S = 1
    L = 3


class Colour(enum.Enum):
    RED = "red"


@dataclass(frozen=True)
class Inner:
    when: datetime
    amount: Decimal


@attrs.frozen
class Record:
    _secret: str
    inner: Inner
    tags: frozenset[str] = attrs.field(factory=frozenset)


@dataclass
class Outer:
    key: uuid.UUID
    day: date
    at: time
    span: timedelta
    blob: bytes
    size: Size
    colour: Colour
    record: Record
    pair: tuple[int, str]
    many: list[Inner]
    by_name: dict[str, Decimal]
    maybe: Inner | None = None
    rest: set[int] = field(default_factory=set)


VALUE = Outer(
    key=uuid.UUID(int=7),
    day=date(2024, 2, 29),
    at=time(23, 59, 1, 500),
    span=timedelta(days=1, microseconds=3),
    blob=b"\x00\x01\xfe",
    size=Size.L,
    colour=Colour.RED,
    record=Record("s", Inner(datetime(2024, 1, 1, tzinfo=UTC), Decimal("1.000"))),
    pair=(1, "one"),
    many=[Inner(datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC), Decimal("-0.5"))],
    by_name={"a": Decimal("2")},
    rest={5, 4},
)


def test_every_type_of_the_table_round_trips_through_plain_json() -> None:
    stored = json.loads(PortableJSONSerializer().serialize(VALUE))

    assert stored["key"] == "00000000-0000-0000-0000-000000000007"
    assert stored["day"] == "2024-02-29" and stored["at"] == "23:59:01.000500"
    assert stored["span"] == 86400.000003 and stored["blob"] == "AAH+"
    assert stored["size"] == 3 and stored["colour"] == "red"
    assert stored["record"] == {
        "_secret": "s",
        "inner": {"when": "2024-01-01T00:00:00.000Z", "amount": "1.000"},
        "tags": [],
    }
    assert stored["many"][0]["when"] == "2024-01-02T03:04:05.000006Z"
    assert stored["maybe"] is None and sorted(stored["rest"]) == [4, 5]
    assert from_portable(Outer, stored) == VALUE
    assert type(from_portable(Outer, stored).size) is Size


def test_without_a_stated_type_the_json_is_kept_as_stored() -> None:
    stored = to_portable(VALUE)
    assert from_portable(Any, stored) == stored
    assert from_portable(dict[str, Any], stored) == stored
    # A hint that does not match plain JSON is not validated (as dbos 3.4 passes it).
    assert from_portable(int, "7") == "7"


def test_a_value_portable_json_cannot_store_names_where_it_is() -> None:
    with pytest.raises(
        PortableValueError, match=r"^DBOS Error: a object cannot .*\(at many\[0\]\.amount\)$"
    ):
        to_portable(Outer(**{**vars(VALUE), "many": [Inner(VALUE.many[0].when, object())]}))  # type: ignore[arg-type]
    with pytest.raises(PortableValueError, match=r"string keys, not int .*\(at by_name\)"):
        to_portable(Outer(**{**vars(VALUE), "by_name": {1: Decimal(1)}}))  # type: ignore[dict-item]
    error = PortableValueError("x", "y")
    assert isinstance(error, TypeError) and isinstance(error, ValueError)


def test_json_that_does_not_fit_the_stated_type_is_refused_naming_the_field() -> None:
    stored = to_portable(VALUE)
    stored["many"][0]["when"] = "yesterday"
    with pytest.raises(
        PortableValueError, match=r"'yesterday' cannot be read as datetime.*\(at many\[0\]\.when\)"
    ):
        from_portable(Outer, stored)
    with pytest.raises(PortableValueError, match=r"2 items where 3 are typed"):
        from_portable(tuple[int, int, int], [1, 2])
    with pytest.raises(PortableValueError, match=r"cannot build Inner"):
        from_portable(Inner, {"when": "2024-01-01T00:00:00Z"})


def test_dbos_3_4_rows_read_back_typed() -> None:
    # What dbos 3.4 writes: milliseconds with Z, a naive datetime as UTC, Decimal as text.
    assert from_portable(datetime, "2024-02-29T21:59:58.123Z") == datetime(
        2024, 2, 29, 21, 59, 58, 123000, tzinfo=UTC
    )
    assert from_portable(date, "2024-02-29") == date(2024, 2, 29)
    assert from_portable(Decimal, "1E+3") == Decimal("1000")
    assert to_portable(Decimal("NaN")) == "NaN"  # as 3.4 formats it
    assert from_portable(list[Size] | None, [1, 3]) == [Size.S, Size.L]
    assert from_portable(int | None, None) is None


def test_hints_come_from_annotations_and_bad_annotations_mean_none() -> None:
    def typed(a: Inner, *rest: Size, b: Decimal, **more: date) -> Outer:
        raise AssertionError

    def broken(a: NoSuchType) -> NoSuchType:  # type: ignore[name-defined]  # noqa: F821
        raise AssertionError

    shape = parameter_hints(typed)
    assert shape.positional == [("a", Inner)]
    assert shape.named == {"a": Inner, "b": Decimal}
    assert (shape.var_positional, shape.var_keyword) == (Size, date)
    assert return_hint(typed) is Outer
    assert parameter_hints(broken).positional == []
    assert from_portable(return_hint(broken), {"x": 1}) == {"x": 1}


def test_the_codec_refuses_a_value_over_its_limit_and_shortens_an_error() -> None:
    codec = Codec(PickleSerializer(), max_value_bytes=8192, setting="Config.max_value_bytes")
    with pytest.raises(DBOSValueTooLargeError) as raised:
        codec.encode("é" * 5000, PORTABLE_JSON, "the output of step s in workflow w")
    # Measured in UTF-8 bytes, not characters.
    assert (raised.value.what, raised.value.size, raised.value.limit) == (
        "the output of step s in workflow w",
        10002,
        8192,
    )
    assert isinstance(raised.value, ValueError)
    with pytest.raises(DBOSValueTooLargeError, match="the inputs of workflow f"):
        codec.encode_inputs(("x" * 9000,), {}, PICKLE, "the inputs of workflow f")
    assert codec.encode("é" * 2000, PORTABLE_JSON)  # 4,002 bytes: within
    for fmt in (PICKLE, PORTABLE_JSON):
        text = codec.encode_error(KeyError("k" * 100_000), fmt)
        assert len(text) <= 8192
        assert "[shortened: the error was" in str(codec.decode_error(text, fmt))
    unlimited = Codec(PickleSerializer(), max_value_bytes=None)
    assert len(unlimited.encode("z" * (17 * 1024 * 1024), PORTABLE_JSON)) > 17 * 1024 * 1024
