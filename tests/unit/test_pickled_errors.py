"""A pickled error is read — class, message, traceback, attempts — without unpickling it.

Every pickle here names a class this reader could never import or trust: the reading walks
opcodes only. The proof that nothing is executed: a pickle whose unpickling would run code
(``os.system`` via ``__reduce__``) is read as a description of that call, and the side
effect never happens.
"""

from __future__ import annotations

import base64
import pickle
from pathlib import Path
from typing import Any

from dbos_trio import DBOSMaxStepRetriesExceeded, DBOSStepTimeoutError, PickleSerializer
from dbos_trio._core.pickled import TRACEBACK_ATTRIBUTE, read_pickled_error
from dbos_trio._serialization import Codec, keep_tracebacks

SERIALIZER = PickleSerializer()


class PaymentDeclined(Exception):
    """An application's own exception class."""


def raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:
        return caught


def test_an_applications_own_exception_is_read_by_name_message_and_traceback() -> None:
    error = raised(PaymentDeclined("card 4242 declined", 17))
    keep_tracebacks(error)
    reading = read_pickled_error(SERIALIZER.serialize(error))
    assert reading is not None
    assert reading.error.type_name == f"{__name__}.PaymentDeclined"
    assert reading.error.message == "card 4242 declined"
    assert reading.error.traceback is not None
    assert "raise error" in reading.error.traceback
    assert reading.error.traceback.rstrip().endswith("PaymentDeclined: ('card 4242 declined', 17)")
    assert reading.summary() == f"{__name__}.PaymentDeclined: card 4242 declined"


def test_a_retries_error_shows_its_own_message_and_every_attempt() -> None:
    attempts: list[BaseException] = [
        raised(ValueError("boom 1")),
        raised(PaymentDeclined("declined")),
        raised(DBOSStepTimeoutError("charge", 1.5)),
    ]
    error = raised(DBOSMaxStepRetriesExceeded("charge", 3, attempts))
    keep_tracebacks(error)
    reading = read_pickled_error(SERIALIZER.serialize(error))
    assert reading is not None
    assert reading.error.type_name == "dbos_trio.DBOSMaxStepRetriesExceeded"
    assert reading.error.message == "Step charge has exceeded its maximum of 3 retries"
    assert [(n.type_name, n.message) for n in reading.nested] == [
        ("builtins.ValueError", "boom 1"),
        (f"{__name__}.PaymentDeclined", "declined"),
        (
            "dbos_trio.DBOSStepTimeoutError",
            "Step charge was cancelled after exceeding its timeout of 1.5 seconds",
        ),
    ]
    assert all(n.traceback and "raise error" in n.traceback for n in reading.nested)


def test_the_codec_keeps_the_traceback_inside_the_pickle_the_official_sdk_reads() -> None:
    error = raised(KeyError("missing"))
    text = Codec(SERIALIZER).encode_error(error, "py_pickle")
    back: Any = pickle.loads(base64.b64decode(text))  # what any Python SDK does with it
    assert type(back) is KeyError and back.args == ("missing",)
    assert "KeyError: 'missing'" in getattr(back, TRACEBACK_ATTRIBUTE)


def test_older_protocols_and_builtins_are_read_too() -> None:
    for protocol in (0, 2, 4, 5):
        text = base64.b64encode(pickle.dumps(ValueError("old"), protocol=protocol)).decode()
        reading = read_pickled_error(text)
        assert reading is not None
        assert (reading.error.type_name, reading.error.message) == ("builtins.ValueError", "old")


def test_what_is_not_a_pickled_exception_reads_as_nothing() -> None:
    assert read_pickled_error(SERIALIZER.serialize("step 1 done")) is None
    assert read_pickled_error(SERIALIZER.serialize(42)) is None
    assert read_pickled_error("not base64 at all!") is None
    assert read_pickled_error(base64.b64encode(b"\x80\x04garbage").decode()) is None


def test_reading_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Touch:
        def __reduce__(self) -> tuple[Any, ...]:
            return (Path.touch, (marker,))

    text = base64.b64encode(pickle.dumps(Touch())).decode()
    reading = read_pickled_error(text)
    assert not marker.exists()
    assert reading is not None and reading.error.type_name == "pathlib.Path.touch"
