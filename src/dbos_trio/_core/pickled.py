"""What a pickled exception says, read from its opcodes without unpickling it.

A failed workflow's error, and each failed step's, is stored as a pickle (``py_pickle``, the
format every Python SDK writes). Unpickling runs code named by the data, so the CLI and
the dashboard refuse it unless told to trust the database, and even then it fails when the
exception's class is the application's own (``__main__.PaymentDeclined``) and this process
cannot import it. Yet the operator's question — what failed, and why — is answered by plain
values inside the pickle: the class's module and name, the arguments it was raised with,
and (for rows dbos_trio wrote) the traceback text it keeps with the error.

So this module walks the pickle's opcodes with :mod:`pickletools` — a reader that executes
nothing, imports nothing and builds no object — and picks those values out. It is a
reading of the common shapes (``cls(*args)`` with a state dict; dbos_trio's own errors,
rebuilt from a dict; a retries error holding its attempts' errors), not a general
unpickler: anything it cannot read it says it could not read.

Pure: no I/O, no trio.
"""

from __future__ import annotations

import base64
import binascii
import pickletools
from typing import Any

import attrs

# The attribute dbos_trio stores a failed attempt's traceback text under, inside the
# exception's own state: carried in the same pickle, so the row's format and schema are
# exactly the official SDKs' (they unpickle it as one more attribute).
TRACEBACK_ATTRIBUTE = "_dbos_traceback"

# Globals a pickle names that are the machinery of rebuilding, not the exception's class.
_MACHINERY = frozenset(
    {
        "dbos_trio.errors._rebuild",
        "dbos_trio._errors._rebuild",
        "copyreg._reconstructor",
        "copyreg.__newobj__",
        "builtins.object",
        "builtins.getattr",
    }
)
_REBUILDERS = frozenset(
    {("global", "dbos_trio.errors._rebuild"), ("global", "dbos_trio._errors._rebuild")}
)
_STRING_OPS = frozenset(
    {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
     "SHORT_BINSTRING"}
)  # fmt: skip
_MEMO_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})


@attrs.frozen(kw_only=True)
class RaisedError:
    """One exception as its pickle describes it: ``type_name`` (module-qualified), its
    ``message`` (the first text argument, or its ``message`` field), and the traceback text
    kept with it (None when it has none)."""

    type_name: str
    message: str | None
    traceback: str | None = None


@attrs.frozen(kw_only=True)
class ErrorReading:
    """A pickled error, read: the error itself, and the errors nested in it in the order
    they appear (a retries error's attempts, a chained cause)."""

    error: RaisedError
    nested: tuple[RaisedError, ...] = ()

    def summary(self) -> str:
        """``Type: message`` of the error, short module names kept (``ValueError``,
        ``__main__.PaymentDeclined``)."""
        return one_line(self.error)

    def text(self) -> str:
        """The summary line and its details, as one block of text."""
        return "\n".join([self.summary(), *self.details()])

    def details(self) -> list[str]:
        """The lines under the summary: each nested error (a retries error's attempts),
        then the traceback of the error or, if it has none, of its last attempt."""
        lines: list[str] = []
        if self.nested:
            lines.append("attempts:")
            lines += [f"  {n}. {one_line(e)}" for n, e in enumerate(self.nested, 1)]
        traceback = self.error.traceback or next(
            (e.traceback for e in reversed(self.nested) if e.traceback), None
        )
        if traceback:
            lines.append("traceback:")
            lines += ["  " + line for line in traceback.rstrip().splitlines()]
        return lines


def one_line(error: RaisedError) -> str:
    name = error.type_name.removeprefix("builtins.").removeprefix("dbos_trio.")
    return name if not error.message else f"{name}: {error.message}"


def read_pickled_error(text: str) -> ErrorReading | None:
    """Read ``text`` (a base64 ``py_pickle`` payload) as an exception, executing nothing.

    None when it is not base64, not a pickle, or names no class (a pickled string or
    number: not an exception)."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None
    try:
        tokens = _tokens(data)
    except Exception:  # a truncated or foreign byte string: nothing to read
        return None
    found = _errors(tokens)
    if not found:
        return None
    return ErrorReading(error=found[0], nested=tuple(found[1:]))


def _tokens(data: bytes) -> list[tuple[str, Any]]:
    """The pickle's values that matter, in order: ("global", "module.name") for each class
    or function it names, ("str", text) for each text (a dict key and a value alike)."""
    memo: dict[int, Any] = {}
    recent: list[Any] = []  # the values pushed lately, for STACK_GLOBAL and MEMOIZE
    tokens: list[tuple[str, Any]] = []
    for opcode, arg, _ in pickletools.genops(data):
        name = opcode.name
        if name in _STRING_OPS:
            value = arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
            recent.append(value)
            tokens.append(("str", value))
        elif name in ("GLOBAL", "INST"):
            qualified = str(arg).replace(" ", ".", 1)
            recent.append(("global", qualified))
            tokens.append(("global", qualified))
        elif name == "STACK_GLOBAL":
            module, qualname = recent[-2], recent[-1]
            qualified = f"{module}.{qualname}"
            # The two strings were the class's name, not text of the error.
            if tokens[-2:] == [("str", module), ("str", qualname)]:
                del tokens[-2:]
            recent.append(("global", qualified))
            tokens.append(("global", qualified))
        elif name == "MEMOIZE":
            memo[len(memo)] = recent[-1] if recent else None
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[int(str(arg))] = recent[-1] if recent else None
        elif name in _MEMO_GET:
            remembered = memo.get(int(str(arg)))
            recent.append(remembered)
            if isinstance(remembered, str):
                tokens.append(("str", remembered))
            elif isinstance(remembered, tuple):
                tokens.append(remembered)
        else:
            recent.append(None)
    return tokens


def _errors(tokens: list[tuple[str, Any]]) -> list[RaisedError]:
    """The exceptions the tokens describe, in order: each class (not machinery), its text,
    and the text after the traceback key, up to the next class.

    Its text: for an error rebuilt from its state dict (dbos_trio's own, named after the
    ``_rebuild`` machinery) the value of its ``message`` key — which, for an error holding
    others (a retries error's attempts), comes after theirs, so the outermost looks to the
    end; for any other, the first text it was raised with."""
    starts = [
        i for i, (kind, value) in enumerate(tokens) if kind == "global" and value not in _MACHINERY
    ]
    found: list[RaisedError] = []
    for position, start in enumerate(starts):
        end = starts[position + 1] if position + 1 < len(starts) else len(tokens)
        texts = [value for kind, value in tokens[start + 1 : end] if kind == "str"]
        rebuilt = start > 0 and tokens[start - 1] in _REBUILDERS
        message: str | None
        if rebuilt and position == 0:
            # Its own fields come last, after the errors it holds: the last "message" key.
            everything = [value for kind, value in tokens[start + 1 :] if kind == "str"]
            message = _after(everything, "message", last=True)
        elif rebuilt:
            message = _after(texts, "message")
        else:
            message = next((text for text in texts if text != TRACEBACK_ATTRIBUTE), None)
        type_name = str(tokens[start][1])
        if type_name.startswith("exceptions."):  # protocol 0-2 names builtins so
            type_name = "builtins." + type_name.removeprefix("exceptions.")
        found.append(
            RaisedError(
                type_name=type_name, message=message, traceback=_after(texts, TRACEBACK_ATTRIBUTE)
            )
        )
    return found


def _after(texts: list[str], key: str, *, last: bool = False) -> str | None:
    """The text right after ``key`` in ``texts`` (its first occurrence, or its last)."""
    found = None
    for index, text in enumerate(texts[:-1]):
        if text == key:
            found = texts[index + 1]
            if not last:
                return found
    return found


def read_error(value: Any) -> ErrorReading | None:
    """What is known of a recorded error: from the exception itself when it was decoded,
    else from its pickle's opcodes (nothing is unpickled, so the application's classes need
    not be importable and no trust in the database is needed)."""
    if isinstance(value, BaseException):
        held = getattr(value, "errors", None)
        nested = held if isinstance(held, list) else []
        return ErrorReading(
            error=_raised(value),
            nested=tuple(_raised(e) for e in nested if isinstance(e, BaseException)),
        )
    if isinstance(value, str):
        return read_pickled_error(value)
    return None


def _raised(error: BaseException) -> RaisedError:
    kind = type(error)
    message = getattr(error, "message", None)
    if not isinstance(message, str):
        message = str(error.args[0]) if len(error.args) == 1 else str(error) or None
    traceback = getattr(error, TRACEBACK_ATTRIBUTE, None)
    return RaisedError(
        type_name=f"{kind.__module__}.{kind.__qualname__}",
        message=message,
        traceback=traceback if isinstance(traceback, str) else None,
    )
