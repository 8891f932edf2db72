"""Payload formats, named by the ``serialization`` column every payload row carries.

Invariant: a payload is always written together with the name of its format, and read
back by that name, never by whatever this process is configured with today. So a workflow
keeps its format across restarts and code changes, and rows written by any other DBOS SDK
are readable whenever their format is one we know:

* ``py_pickle`` — base64 of ``pickle.dumps`` (the official Python SDK's default, and ours);
  workflow inputs are the dict ``{"args": tuple, "kwargs": dict}``.
* ``portable_json`` — compact JSON every SDK reads: datetimes as RFC 3339 UTC with
  milliseconds and ``Z``, dates as ISO dates, ``Decimal`` as a fixed-point string, sets and
  tuples as arrays, string-keyed maps only; inputs as ``{"positionalArgs": [...],
  "namedArgs": {...}}`` (``namedArgs`` omitted when empty, the minimal form the other SDKs
  write); errors as ``{"name", "message", "code", "data"}``, read back as
  :class:`PortableWorkflowError`.
* a custom :class:`Serializer`'s own name, readable only while that serializer is configured.
"""

from __future__ import annotations

import base64
import json
import pickle
import traceback
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Protocol, runtime_checkable

from dbos_trio._core.pickled import TRACEBACK_ATTRIBUTE
from dbos_trio.errors import DBOSPayloadError, PortableWorkflowError

PICKLE = "py_pickle"
PORTABLE_JSON = "portable_json"


@runtime_checkable
class Serializer(Protocol):
    """Turns values into strings and back; ``name()`` is stored beside every payload."""

    def serialize(self, value: Any) -> str:
        """``value`` as text to store; raise (any ``Exception``) if it cannot be encoded.
        Called before anything is written, so a failure leaves no row behind."""
        ...

    def deserialize(self, text: str) -> Any:
        """The value ``serialize`` stored as ``text``; an exception raised here reaches the
        reader as :class:`~dbos_trio.DBOSPayloadError`."""
        ...

    def name(self) -> str:
        """The name stored in the ``serialization`` column beside every payload it wrote."""
        ...


class PickleSerializer:
    """The default: base64 of a pickle, stored as ``py_pickle``."""

    def serialize(self, value: Any) -> str:
        """Base64 of ``pickle.dumps(value)``; an unpicklable value raises pickle's error."""
        return base64.b64encode(pickle.dumps(value)).decode("ascii")

    def deserialize(self, text: str) -> Any:
        """Unpickle: this runs code chosen by whoever wrote ``text`` (see allow_pickle)."""
        return pickle.loads(base64.b64decode(text))

    def name(self) -> str:
        """``"py_pickle"``, the official Python SDK's name for this format."""
        return PICKLE


def _rfc3339_utc(moment: datetime) -> str:
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def to_portable(value: Any) -> Any:
    """``value`` as plain JSON data, or ``TypeError`` naming what cannot be represented."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return _rfc3339_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, list | tuple | set | frozenset):
        return [to_portable(item) for item in value]
    if isinstance(value, Mapping):
        portable: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"portable JSON maps need string keys, not {type(key).__name__} ({key!r})"
                )
            portable[key] = to_portable(item)
        return portable
    raise TypeError(f"a {type(value).__name__} cannot be stored as portable JSON")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON: portable JSON has no NaN or Infinity")


class PortableJSONSerializer:
    """Cross-language JSON, stored as ``portable_json``: strict JSON, so every SDK reads
    it — NaN and infinities are refused both ways (``ValueError``)."""

    def serialize(self, value: Any) -> str:
        """Compact JSON of ``value``; a value JSON cannot carry raises ``ValueError``."""
        portable = to_portable(value)
        try:
            text = json.dumps(portable, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except ValueError:
            raise ValueError(
                "portable JSON cannot store NaN or infinity (they are not JSON)"
            ) from None
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate in a string has no UTF-8 form, so the database cannot store
            # it as it is; JSON's \uXXXX escape keeps it, in ASCII, and every JSON parser
            # reads it back as the same string.
            text = json.dumps(portable, separators=(",", ":"), ensure_ascii=True)
        return text

    def deserialize(self, text: str) -> Any:
        """Parse JSON (NaN and infinities refused with ``ValueError``); runs no code."""
        return json.loads(text, parse_constant=_no_constants)

    def name(self) -> str:
        """``"portable_json"``, the format every DBOS SDK reads."""
        return PORTABLE_JSON


_PICKLE = PickleSerializer()
_PORTABLE = PortableJSONSerializer()


class Codec:
    """Reads and writes payloads by format name, with one configured custom serializer.

    Reading is a trust boundary: a ``py_pickle`` payload runs code of whoever could write
    the system database. ``allow_pickle=False`` refuses to read one (portable-only mode).
    A payload that cannot be read raises :class:`DBOSPayloadError` naming what it was.
    """

    def __init__(self, configured: Serializer, *, allow_pickle: bool = True) -> None:
        self.configured = configured
        self.default_format = configured.name()
        self.allow_pickle = allow_pickle

    def _serializer_for(self, fmt: str | None) -> Serializer:
        if fmt is None or fmt == self.configured.name():
            serializer = self.configured
        elif fmt == PORTABLE_JSON:
            return _PORTABLE
        elif fmt == PICKLE:
            serializer = _PICKLE
        else:
            raise TypeError(f"Serialization {fmt} is not available")
        return serializer

    def _reader_for(self, fmt: str | None, what: str) -> Serializer:
        serializer = self._serializer_for(fmt)
        if not self.allow_pickle and serializer.name() == PICKLE:
            raise DBOSPayloadError(
                what,
                PICKLE,
                "pickled payloads are refused by this process (allow_pickle=False): "
                "reading one would run code of whoever wrote it",
            )
        return serializer

    def format_for(self, portable: bool | None) -> str:
        """The format a new workflow writes: portable JSON if asked, else the configured one."""
        return PORTABLE_JSON if portable else self.default_format

    def encode(self, value: Any, fmt: str | None = None) -> str:
        return self._serializer_for(fmt).serialize(value)

    def decode(self, text: str | None, fmt: str | None, what: str = "a payload") -> Any:
        """The value of ``text``; :class:`DBOSPayloadError` naming ``what`` if unreadable."""
        if text is None:
            return None
        serializer = self._reader_for(fmt, what)
        try:
            return serializer.deserialize(text)
        except Exception as unreadable:
            raise DBOSPayloadError(what, fmt, unreadable) from unreadable

    def encode_inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any], fmt: str) -> str:
        if fmt == PORTABLE_JSON:
            envelope: dict[str, Any] = {"positionalArgs": list(args)}
            if kwargs:
                envelope["namedArgs"] = kwargs
            return _PORTABLE.serialize(envelope)
        return self._serializer_for(fmt).serialize({"args": tuple(args), "kwargs": dict(kwargs)})

    def decode_inputs(
        self, text: str | None, fmt: str | None, what: str = "workflow inputs"
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if text is None:
            return (), {}
        serializer = self._reader_for(fmt, what)
        try:
            if fmt == PORTABLE_JSON:
                envelope = _PORTABLE.deserialize(text)
                if not isinstance(envelope, dict):
                    raise TypeError("portable workflow inputs must be a JSON object")
                positional = envelope.get("positionalArgs") or []
                named = envelope.get("namedArgs") or {}
                return tuple(positional), dict(named)
            inputs = serializer.deserialize(text)
            return tuple(inputs["args"]), dict(inputs["kwargs"])
        except Exception as unreadable:
            raise DBOSPayloadError(what, fmt, unreadable) from unreadable

    def encode_error(self, error: BaseException, fmt: str) -> str:
        if fmt == PORTABLE_JSON:
            return _PORTABLE.serialize(portable_error_envelope(error))
        if fmt == PICKLE:
            keep_tracebacks(error)
        try:
            return self._serializer_for(fmt).serialize(error)
        except Exception:
            # An unpicklable exception must still let the row reach ERROR.
            return self._serializer_for(fmt).serialize(
                Exception(f"{type(error).__name__}: {error}")
            )

    def decode_error(self, text: str, fmt: str | None, what: str = "an error") -> BaseException:
        serializer = self._reader_for(fmt, what)
        try:
            if fmt == PORTABLE_JSON:
                envelope = _PORTABLE.deserialize(text)
                return PortableWorkflowError(
                    envelope.get("message", ""),
                    envelope.get("name", "Error"),
                    envelope.get("code"),
                    envelope.get("data"),
                )
            error = serializer.deserialize(text)
        except Exception as unreadable:
            raise DBOSPayloadError(what, fmt, unreadable) from unreadable
        if not isinstance(error, BaseException):
            return Exception(str(error))
        return error


def portable_error_envelope(error: BaseException) -> dict[str, Any]:
    """The cross-language description of ``error``."""
    if isinstance(error, PortableWorkflowError):
        return {
            "name": error.name,
            "message": error.message,
            "code": error.code,
            "data": error.data,
        }
    code: Any = None
    for attribute in ("code", "error_code", "errno", "status", "status_code"):
        candidate = getattr(error, attribute, None)
        if isinstance(candidate, int | str) and not isinstance(candidate, bool):
            code = candidate
            break
    envelope: dict[str, Any] = {"name": type(error).__name__, "message": str(error), "code": code}
    for attribute in ("data", "details", "payload", "extra", "meta", "metadata"):
        if hasattr(error, attribute) and not callable(getattr(error, attribute)):
            try:
                envelope["data"] = to_portable(getattr(error, attribute))
            except TypeError:
                envelope["data"] = str(getattr(error, attribute))
            break
    return envelope


# The longest traceback text kept with a recorded error (its end, where it was raised).
MAX_TRACEBACK_CHARS = 8_000


def keep_tracebacks(error: BaseException) -> None:
    """Store the traceback text of ``error`` — and of the errors it holds, a retries error's
    attempts — in its own state (:data:`~dbos_trio._core.pickled.TRACEBACK_ATTRIBUTE`), so
    that it travels inside the pickle: any process can read it back without the
    application's classes and without unpickling (:mod:`dbos_trio._core.pickled`), while
    the row keeps exactly the format the official SDKs read (for them, one more attribute).
    An error that has one already, or no traceback, or no ``__dict__``, is left as it is."""
    held = getattr(error, "errors", None)
    for one in [error, *(held if isinstance(held, list | tuple) else [])]:
        if not isinstance(one, BaseException) or one.__traceback__ is None:
            continue
        state = getattr(one, "__dict__", None)
        if not isinstance(state, dict) or TRACEBACK_ATTRIBUTE in state:
            continue
        text = "".join(traceback.format_exception(one))
        state[TRACEBACK_ATTRIBUTE] = text[-MAX_TRACEBACK_CHARS:]
