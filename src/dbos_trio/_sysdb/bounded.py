"""Records of payloads read with a bound: what the faces that show values to a person (the
CLI, the dashboard) ask the system database for instead of the whole rows.

Invariant: a bounded read never transfers a payload column over the bound whole. The
statement itself measures each payload (its size in bytes, which PostgreSQL and SQLite know
without handing the value over) and returns a payload over ``whole_up_to`` bytes only as its
first ``head_chars`` characters, so a 50 MB value another SDK wrote costs a page a few
kilobytes, not 50 MB through the driver and the process's memory. A payload within the bound
comes whole and is decoded as from any other read. Only the faces read this way: every path
that needs the value itself (``get_result``, replay, recovery, export) reads it whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import attrs

R = TypeVar("R")


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"PayloadBound.{attribute.name}: {value!r} must be a positive integer")


@attrs.frozen
class PayloadBound:
    """How much of a payload a bounded read returns: whole if it is at most
    ``whole_up_to`` bytes, else its first ``head_chars`` characters and its size."""

    whole_up_to: int = attrs.field(validator=_positive)
    head_chars: int = attrs.field(validator=_positive)


@attrs.frozen
class Bounded(Generic[R]):
    """A record read with a :class:`PayloadBound`.

    ``clipped`` names each payload field of ``record`` that was over the bound, with the
    size in bytes of the whole value: that field holds only the value's first characters
    (never decodable: show it as text). Every other payload field is whole."""

    record: R
    clipped: Mapping[str, int] = attrs.field(factory=dict)


def clipped_fields(sizes: Mapping[str, Any], bound: PayloadBound) -> dict[str, int]:
    """The clipped fields of a row of a bounded statement (name -> size in bytes), from each
    payload field's size as the statement measured it. A NULL payload has no size and is
    never clipped."""
    return {
        field: int(size)
        for field, size in sizes.items()
        if size is not None and int(size) > bound.whole_up_to
    }
