"""Typed values in portable JSON: what each Python type is stored as, and how it comes back.

Invariants, and why:

* The stored form is plain JSON that any DBOS SDK reads without knowing Python: a
  dataclass, attrs class or pydantic model is an object of its fields; a datetime an
  RFC 3339 UTC string ending in ``Z`` (milliseconds, as dbos 3.4 writes them, or
  microseconds when the value has them); a date, time, UUID or Decimal a string; a
  timedelta a number of seconds; bytes base64; an Enum its value; tuples and sets arrays.
  No type name is ever written, so nothing about the value's class travels in the data.
* A value comes back typed only from a type the reader states — the annotations of the
  function that receives or returns it (``typing.get_type_hints``), or the type passed to
  :func:`from_portable` — never from anything the data says. Reading JSON therefore never
  imports a module or constructs a class the program did not name.
* A value that cannot be stored raises :class:`PortableValueError` (a ``TypeError``)
  naming where in the value it sits (``args[0].lines[2].price``), before anything is
  written. pydantic is optional: its models are recognised by their methods
  (``model_dump`` / ``model_validate``), and pydantic is never imported here.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import enum
import functools
import inspect
import types
import typing
import uuid
from collections.abc import Mapping, Sequence, Set
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import attrs

from dbos_trio.errors import PortableValueError


def rfc3339_utc(moment: datetime) -> str:
    """``moment`` in UTC as RFC 3339 with ``Z``: milliseconds (the cross-SDK form), or
    microseconds when it has a part below the millisecond (kept, rather than lost)."""
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    precision = "milliseconds" if moment.microsecond % 1000 == 0 else "microseconds"
    return moment.isoformat(timespec=precision).replace("+00:00", "Z")


def _is_pydantic_model(value: Any) -> bool:
    kind = type(value)
    return callable(getattr(kind, "model_dump", None)) and hasattr(kind, "model_fields")


def to_portable(value: Any, path: str = "") -> Any:
    """``value`` as plain JSON data; :class:`PortableValueError` naming the part that
    cannot be represented."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return to_portable(value.value, path)
    if isinstance(value, int | float):
        return value
    if isinstance(value, datetime):
        return rfc3339_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return format(value, "f")  # "NaN", "Infinity" too, as dbos 3.4 writes them
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list | tuple | set | frozenset):
        return [to_portable(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        portable: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise PortableValueError(
                    path,
                    f"portable JSON maps need string keys, not {type(key).__name__} ({key!r})",
                )
            portable[key] = to_portable(item, f"{path}[{key!r}]")
        return portable
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: to_portable(getattr(value, field.name), _dot(path, field.name))
            for field in dataclasses.fields(value)
        }
    if attrs.has(type(value)):
        return {
            field.name: to_portable(getattr(value, field.name), _dot(path, field.name))
            for field in attrs.fields(type(value))
        }
    if _is_pydantic_model(value):
        # pydantic's own JSON form (its datetimes, aliases): what it validates back from.
        return value.model_dump(mode="json", by_alias=True)
    raise PortableValueError(path, f"a {type(value).__name__} cannot be stored as portable JSON")


def _dot(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


_NONE = type(None)


def from_portable(hint: Any, data: Any, path: str = "") -> Any:
    """``data`` (plain JSON, as ``recv``, ``get_event`` or ``read_stream`` return a portable
    value) as the type ``hint`` says: ``from_portable(Order, await dbos.recv("orders"))``.

    Types as in the table of docs/input-and-trust.md, nested (``list[Line]``,
    ``Order | None``); ``Any``, a missing or unknown hint, a type variable or an unresolved
    forward reference leave the data as it is. Data that does not fit raises
    :class:`~dbos_trio.PortableValueError` naming the field (``lines[2].price``). Pure: it
    reads nothing, imports nothing named by the data, and has nothing to cancel."""
    if hint is UNTYPED or hint is None or hint is Any or hint is object:
        return data
    if isinstance(hint, typing.TypeVar | typing.ForwardRef | str):
        return data
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return from_portable(typing.get_args(hint)[0], data, path)
    if origin is typing.Literal or origin is typing.ClassVar:
        return data
    if origin is typing.Union or origin is types.UnionType:
        return _union(typing.get_args(hint), data, path)
    if origin is not None:
        return _generic(origin, typing.get_args(hint), data, path)
    if not isinstance(hint, type):
        return data
    if data is None:
        return None  # a None stored where a type was hinted: leave it to the program
    try:
        return _scalar(hint, data, path)
    except PortableValueError:
        raise
    except Exception as unfit:
        raise PortableValueError(
            path, f"{_short(data)} cannot be read as {hint.__name__}: {unfit}"
        ) from None


def _short(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _union(members: tuple[Any, ...], data: Any, path: str) -> Any:
    if data is None and _NONE in members:
        return None
    problems = []
    for member in members:
        if member is _NONE:
            continue
        try:
            return from_portable(member, data, path)
        except PortableValueError as unfit:
            problems.append(unfit.problem)
    raise PortableValueError(path, "; ".join(problems) or f"{_short(data)} fits no member")


def _generic(origin: Any, args: tuple[Any, ...], data: Any, path: str) -> Any:
    if data is None:
        return None
    if origin in (list, set, frozenset, tuple) or (
        isinstance(origin, type) and issubclass(origin, Sequence | Set)
    ):
        if not isinstance(data, list):
            raise PortableValueError(path, f"{_short(data)} is not an array")
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(data):
                raise PortableValueError(path, f"{len(data)} items where {len(args)} are typed")
            return tuple(
                from_portable(arg, item, f"{path}[{i}]")
                for i, (arg, item) in enumerate(zip(args, data, strict=True))
            )
        item_hint = args[0] if args else Any
        items = [from_portable(item_hint, item, f"{path}[{i}]") for i, item in enumerate(data)]
        if origin in (set, frozenset, tuple):
            return origin(items)
        if isinstance(origin, type) and issubclass(origin, Set):
            return set(items)
        return items
    if origin is dict or (isinstance(origin, type) and issubclass(origin, Mapping)):
        if not isinstance(data, dict):
            raise PortableValueError(path, f"{_short(data)} is not an object")
        value_hint = args[1] if len(args) == 2 else Any
        return {
            key: from_portable(value_hint, item, f"{path}[{key!r}]") for key, item in data.items()
        }
    return data


def _scalar(hint: type, data: Any, path: str) -> Any:
    if isinstance(data, hint):
        return data
    if issubclass(hint, enum.Enum):
        return hint(data)
    if hint is datetime:
        return datetime.fromisoformat(_text(data).replace("Z", "+00:00"))
    if hint is date:
        return date.fromisoformat(_text(data)[:10])
    if hint is time:
        return time.fromisoformat(_text(data))
    if hint is timedelta:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise TypeError("a timedelta is stored as a number of seconds")
        return timedelta(seconds=data)
    if hint is Decimal:
        if isinstance(data, bool) or not isinstance(data, str | int | float):
            raise TypeError("a Decimal is stored as a string")
        return Decimal(str(data))
    if hint is uuid.UUID:
        return uuid.UUID(_text(data))
    if hint is bytes:
        return base64.b64decode(_text(data), validate=True)
    if hint is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if dataclasses.is_dataclass(hint):
        return _record(hint, data, path, _dataclass_fields(hint))
    if attrs.has(hint):
        return _record(hint, data, path, _attrs_fields(hint))
    validate = getattr(hint, "model_validate", None)
    if callable(validate) and hasattr(hint, "model_fields"):
        return validate(data)
    # A plain JSON type the data does not match, or a class portable JSON has no reading
    # for: the data as stored, as dbos 3.4 passes it (hints are not validated).
    return data


def _text(data: Any) -> str:
    if not isinstance(data, str):
        raise TypeError("it is stored as a string")
    return data


def _dataclass_fields(hint: type) -> list[tuple[str, str, Any]]:
    hints = typing.get_type_hints(hint)
    return [
        (field.name, field.name, hints.get(field.name, Any))
        for field in dataclasses.fields(hint)
        if field.init
    ]


def _attrs_fields(hint: type) -> list[tuple[str, str, Any]]:
    # A forward reference that does not resolve leaves its field's type a string: that
    # field is then read as stored.
    with contextlib.suppress(NameError):
        attrs.resolve_types(hint)
    return [
        (field.name, field.alias or field.name, field.type)
        for field in attrs.fields(hint)
        if field.init
    ]


def _record(hint: type, data: Any, path: str, fields: list[tuple[str, str, Any]]) -> Any:
    if not isinstance(data, dict):
        raise PortableValueError(path, f"{_short(data)} is not an object ({hint.__name__})")
    arguments = {
        parameter: from_portable(field_hint, data[name], _dot(path, name))
        for name, parameter, field_hint in fields
        if name in data
    }
    try:
        return hint(**arguments)
    except TypeError as unfit:
        raise PortableValueError(path, f"cannot build {hint.__name__}: {unfit}") from None


UNTYPED: Any = object()
"""No stated type: a reader given it keeps the JSON as stored."""


@functools.lru_cache(maxsize=4096)
def return_hint(func: Any) -> Any:
    """The annotated return type of ``func`` (:data:`UNTYPED` if it has none, or if its
    annotations do not resolve in its module); cached, as steps ask it on every replay."""
    try:
        return typing.get_type_hints(func).get("return", UNTYPED)
    except Exception:  # an annotation naming what its module does not define
        return UNTYPED


@attrs.frozen
class Parameters:
    """A function's parameters as portable arguments are matched to them."""

    positional: list[tuple[str, Any]]  # in order, with their hints (UNTYPED: none)
    named: dict[str, Any]  # every named parameter's hint
    var_positional: Any = UNTYPED  # the hint of ``*args``' items
    var_keyword: Any = UNTYPED  # the hint of ``**kwargs``' values


def parameter_hints(func: Any) -> Parameters:
    """``func``'s parameters and their annotated types (none when its annotations do not
    resolve in its module)."""
    try:
        hints = typing.get_type_hints(func)
        parameters = list(inspect.signature(func).parameters.values())
    except Exception:
        return Parameters([], {})
    shape = Parameters(
        [
            (p.name, hints.get(p.name, UNTYPED))
            for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ],
        {
            p.name: hints.get(p.name, UNTYPED)
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        },
    )
    for p in parameters:
        if p.kind is p.VAR_POSITIONAL:
            shape = attrs.evolve(shape, var_positional=hints.get(p.name, UNTYPED))
        elif p.kind is p.VAR_KEYWORD:
            shape = attrs.evolve(shape, var_keyword=hints.get(p.name, UNTYPED))
    return shape
