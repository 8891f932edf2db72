"""Payload formats, named by the ``serialization`` column every payload row carries.

Invariant: a payload is always written together with the name of its format, and read
back by that name, never by whatever this process is configured with today. So a workflow
keeps its format across restarts and code changes, and rows written by any other DBOS SDK
are readable whenever their format is one we know:

* ``py_pickle`` — base64 of ``pickle.dumps`` (the official Python SDK's default, and ours);
  workflow inputs are the dict ``{"args": tuple, "kwargs": dict}``.
* ``portable_json`` — compact JSON every SDK reads: datetimes as RFC 3339 UTC with
  milliseconds and ``Z``, dates as ISO dates, ``Decimal`` as a fixed-point string, sets and
  tuples as arrays, string-keyed maps only, dataclasses, attrs classes and pydantic models
  as objects (the whole table, and how values come back typed: :mod:`dbos_trio._core.
  portable_types`); inputs as ``{"positionalArgs": [...],
  "namedArgs": {...}}`` (``namedArgs`` omitted when empty, the minimal form the other SDKs
  write); errors as ``{"name", "message", "code", "data"}``, read back as
  :class:`PortableWorkflowError`.
* a custom :class:`Serializer`'s own name, readable only while that serializer is configured.

Every value the codec encodes for a write is measured first: one over the configured
limit (``Config.max_value_bytes``) is refused before anything is written, so no row that
every recovery and listing must then read can grow without bound.

With a payload store configured (``Config.payload_store``), a value whose stored text is
over ``Config.payload_store_threshold`` is put in the store before its row is written, and
the row keeps a reference to it (:mod:`dbos_trio._core.payload_refs`); every decode
resolves a reference first, so each read path sees the value as if it were inline.
Errors are always stored inline (one over the limit is shortened instead). The store's I/O
is :mod:`dbos_trio._payload_io`'s: an encode with ``defer=True`` leaves the put to
:meth:`Codec.settle`, and :meth:`Codec.prefetch` reads entries ahead of a decode, both in a
worker thread, so a large value does not stall the Trio thread.
"""

from __future__ import annotations

import base64
import json
import logging
import pickle
import traceback
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dbos_trio._core.payload_refs import PayloadRef, looks_like_reference, parse_reference
from dbos_trio._core.pickled import TRACEBACK_ATTRIBUTE
from dbos_trio._core.portable_types import UNTYPED
from dbos_trio._core.portable_types import from_portable as from_portable
from dbos_trio._core.portable_types import to_portable as to_portable
from dbos_trio._payload_io import PayloadIO
from dbos_trio.errors import DBOSPayloadError, DBOSValueTooLargeError, PortableWorkflowError
from dbos_trio.errors import PortableValueError as PortableValueError

if TYPE_CHECKING:
    from dbos_trio._payload_store import PayloadStore

logger = logging.getLogger("dbos_trio.serialization")

# The default of Config.max_value_bytes: far above any value a workflow should carry in a
# row, yet small enough that a recovery or a listing reading many rows stays bounded.
DEFAULT_MAX_VALUE_BYTES = 16 * 1024 * 1024
MAX_VALUE_SETTING = "Config.max_value_bytes"
# The default of Config.payload_store_threshold: the preview threshold of the faces, so a
# value a listing or a page would not show whole anyway is the one kept out of the row.
DEFAULT_PAYLOAD_STORE_THRESHOLD = 64 * 1024
# The characters of an error's message kept when the error itself is over the limit.
SHORTENED_ERROR_CHARS = 2_000

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


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON: portable JSON has no NaN or Infinity")


class PortableJSONSerializer:
    """Cross-language JSON, stored as ``portable_json``: strict JSON, so every SDK reads
    it — NaN and infinities are refused both ways (``ValueError``)."""

    def serialize(self, value: Any) -> str:
        """Compact JSON of ``value``; a value JSON cannot carry raises ``ValueError``, a
        type it has no form for :class:`PortableValueError` (a ``TypeError``) naming where."""
        return json_text(to_portable(value))

    def deserialize(self, text: str) -> Any:
        """Parse JSON (NaN and infinities refused with ``ValueError``); runs no code."""
        return json.loads(text, parse_constant=_no_constants)

    def name(self) -> str:
        """``"portable_json"``, the format every DBOS SDK reads."""
        return PORTABLE_JSON


def json_text(portable: Any) -> str:
    """Compact JSON of plain JSON data (:func:`to_portable`'s result)."""
    try:
        text = json.dumps(portable, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ValueError("portable JSON cannot store NaN or infinity (they are not JSON)") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate in a string has no UTF-8 form, so the database cannot store
        # it as it is; JSON's \uXXXX escape keeps it, in ASCII, and every JSON parser
        # reads it back as the same string.
        text = json.dumps(portable, separators=(",", ":"), ensure_ascii=True)
    return text


def stored_size(text: str) -> int:
    """The bytes ``text`` takes in the database (UTF-8)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


_PICKLE = PickleSerializer()
_PORTABLE = PortableJSONSerializer()


class Codec:
    """Reads and writes payloads by format name, with one configured custom serializer.

    Reading is a trust boundary: a ``py_pickle`` payload runs code of whoever could write
    the system database. ``allow_pickle=False`` refuses to read one (portable-only mode).
    A payload that cannot be read raises :class:`DBOSPayloadError` naming what it was.

    Writing is bounded: every encoded value is measured before it is returned for a write,
    and one over ``max_value_bytes`` raises :class:`DBOSValueTooLargeError` naming ``what``
    (an error over the limit is shortened instead, so its workflow still reaches ERROR).
    """

    def __init__(
        self,
        configured: Serializer,
        *,
        allow_pickle: bool = True,
        max_value_bytes: int | None = DEFAULT_MAX_VALUE_BYTES,
        setting: str = MAX_VALUE_SETTING,
        payload_store: PayloadStore | None = None,
        payload_store_threshold: int = DEFAULT_PAYLOAD_STORE_THRESHOLD,
    ) -> None:
        self.configured = configured
        self.payload_store = payload_store
        self.payload_store_threshold = payload_store_threshold
        self.io = PayloadIO(payload_store, payload_store_threshold)
        self.default_format = configured.name()
        self.allow_pickle = allow_pickle
        self.max_value_bytes = max_value_bytes
        self.setting = setting  # named by the size error: what the user raises

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

    def over_limit(self, text: str) -> int | None:
        """The stored size of ``text`` if it is over ``max_value_bytes``, else None."""
        limit = self.max_value_bytes
        if limit is None or len(text) * 4 <= limit:  # UTF-8 takes at most 4 bytes a char
            return None
        size = stored_size(text)
        return size if size > limit else None

    def sized(self, text: str, what: str, *, defer: bool = False) -> str:
        """The text to write for ``text``: itself, or a reference once it is in the payload
        store (over the store's threshold; with ``defer``, an
        :class:`~dbos_trio._payload_io.Unsettled` reference that :meth:`settle` must put
        before the row is written); :class:`DBOSValueTooLargeError` naming ``what`` if over
        the size limit, :class:`DBOSPayloadError` if the store cannot take it."""
        size = self.over_limit(text)
        if size is not None:
            assert self.max_value_bytes is not None
            raise DBOSValueTooLargeError(what, size, self.max_value_bytes, self.setting)
        if looks_like_reference(text):
            # Only a custom serializer can write this: stored as it is, it would be read
            # back as a reference to a stored value.
            raise DBOSPayloadError(
                what,
                self.default_format,
                "the serializer wrote text beginning with 'dbos_trio_payload:', which is "
                "reserved for payload store references",
            )
        return self.io.store_text(text, what, defer=defer)

    async def settle(self, text: str | None) -> str | None:
        """``text`` ready to write: a deferred reference once its entry is whole in the
        store, put in a worker thread (see :meth:`~dbos_trio._payload_io.PayloadIO.settle`
        for cancellation and errors); any other text as it is."""
        return await self.io.settle(text)

    async def prefetch(self, *texts: str | None) -> None:
        """Read the store entries these payloads reference in a worker thread, ahead of
        their decode (see :meth:`~dbos_trio._payload_io.PayloadIO.prefetch`)."""
        await self.io.prefetch(*texts)

    def resolve(self, text: str, fmt: str | None, what: str = "a payload") -> str:
        """The stored text itself: ``text``, or, if it is a payload store reference, the
        text the store holds for it; :class:`DBOSPayloadError` naming the hash and the
        store if it has no such entry, a corrupt one, or this process has no store."""
        return self.io.resolve(text, fmt, what)

    def stored_reference(self, text: str | None) -> PayloadRef | None:
        """The reference ``text`` holds, if it is a well-formed one and this process has
        no payload store to resolve it (what a face shows instead of the value)."""
        if self.payload_store is not None or not looks_like_reference(text):
            return None
        assert text is not None
        try:
            return parse_reference(text)
        except ValueError:
            return None

    def format_for(self, portable: bool | None) -> str:
        """The format a new workflow writes: portable JSON if asked, else the configured one."""
        return PORTABLE_JSON if portable else self.default_format

    def encode(
        self, value: Any, fmt: str | None = None, what: str = "a value", *, defer: bool = False
    ) -> str:
        """``value`` in format ``fmt`` (the serializer's error if it has no form there),
        within the size limit (:class:`DBOSValueTooLargeError` naming ``what``); ``defer``
        as in :meth:`sized`."""
        return self.sized(self._serializer_for(fmt).serialize(value), what, defer=defer)

    def decode(
        self, text: str | None, fmt: str | None, what: str = "a payload", hint: Any = UNTYPED
    ) -> Any:
        """The value of ``text``; :class:`DBOSPayloadError` naming ``what`` if unreadable.
        With ``hint`` (a type), portable JSON is read back as that type
        (:func:`from_portable`); other formats carry their own types."""
        if text is None:
            return None
        serializer = self._reader_for(fmt, what)
        text = self.resolve(text, fmt, what)
        try:
            value = serializer.deserialize(text)
            if hint is not UNTYPED and serializer.name() == PORTABLE_JSON:
                value = from_portable(hint, value)
            return value
        except Exception as unreadable:
            raise DBOSPayloadError(what, fmt, unreadable) from unreadable

    def encode_inputs(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        fmt: str,
        what: str = "the workflow inputs",
        *,
        defer: bool = False,
    ) -> str:
        """The inputs envelope of ``fmt``, within the size limit (``defer`` as in
        :meth:`sized`)."""
        if fmt == PORTABLE_JSON:
            envelope: dict[str, Any] = {
                "positionalArgs": [to_portable(arg, f"args[{i}]") for i, arg in enumerate(args)]
            }
            if kwargs:
                envelope["namedArgs"] = {
                    key: to_portable(value, key) for key, value in kwargs.items()
                }
            return self.sized(json_text(envelope), what, defer=defer)
        text = self._serializer_for(fmt).serialize({"args": tuple(args), "kwargs": dict(kwargs)})
        return self.sized(text, what, defer=defer)

    def decode_inputs(
        self, text: str | None, fmt: str | None, what: str = "workflow inputs"
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if text is None:
            return (), {}
        serializer = self._reader_for(fmt, what)
        text = self.resolve(text, fmt, what)
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

    def encode_error(self, error: BaseException, fmt: str, what: str = "an error") -> str:
        """``error`` in ``fmt``; an error over the size limit is stored shortened (its type
        and the start of its message), so that the row it ends can still be written."""
        text = self._encode_error(error, fmt)
        size = self.over_limit(text)
        if size is None:
            return text
        logger.warning(
            "%s is %d bytes once serialized, over %s (%s bytes): stored shortened",
            what,
            size,
            self.setting,
            self.max_value_bytes,
        )
        message = (
            f"{str(error)[:SHORTENED_ERROR_CHARS]}... [shortened: the error was {size:,} bytes "
            f"once serialized, over {self.setting} ({self.max_value_bytes:,} bytes)]"
        )
        if fmt == PORTABLE_JSON:
            envelope = portable_error_envelope(error)
            stand_in: BaseException = PortableWorkflowError(
                message, envelope["name"], envelope.get("code")
            )
        else:
            stand_in = Exception(f"{type(error).__name__}: {message}")
        return self._encode_error(stand_in, fmt)

    def _encode_error(self, error: BaseException, fmt: str) -> str:
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
        text = self.resolve(text, fmt, what)
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
            except TypeError:  # PortableValueError: the data has no JSON form
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
