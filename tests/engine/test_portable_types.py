"""Typed portable values through real workflows: arguments, results, step outputs,
messages, events and streams come back as the types their readers state, after a crash
too, while the rows hold plain JSON every SDK reads (docs/input-and-trust.md)."""

from __future__ import annotations

import enum
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import attrs
import pytest

from dbos_trio import (
    DBOS,
    DBOSException,
    PortableJSONSerializer,
    PortableWorkflowError,
    SetWorkflowID,
    from_portable,
)

from support.backends import count_rows, query, steps_of
from support.waiting import wait_until

MakeDBOS = Callable[..., DBOS]

try:
    import pydantic
except ImportError:  # optional: its test skips
    Payment: Any = None
else:

    class Payment(pydantic.BaseModel):  # type: ignore[no-redef]
        amount: Decimal
        at: datetime


class Tier(enum.Enum):
    GOLD = "gold"
    SILVER = "silver"


@dataclass
class Line:
    sku: str
    price: Decimal
    quantity: int = 1


@dataclass
class Order:
    order_id: uuid.UUID
    lines: list[Line]
    placed: datetime
    due: date
    tier: Tier
    window: timedelta
    signature: bytes
    tags: tuple[str, ...] = ()
    seen: set[int] = field(default_factory=set)


@attrs.define
class Quote:
    total: Decimal
    at: datetime


@dataclass
class Note:
    text: str
    when: datetime


@dataclass
class Receipt:
    order_id: uuid.UUID
    quote: Quote
    note: Note


ORDER = Order(
    order_id=uuid.UUID("7f1d3a5e-3b0b-4c1e-9a57-2b9c1f0e8d11"),
    lines=[Line("apple", Decimal("1.25"), 4), Line("pear", Decimal("0.10"))],
    placed=datetime(2025, 3, 4, 5, 6, 7, 891234, tzinfo=UTC),
    due=date(2025, 3, 10),
    tier=Tier.GOLD,
    window=timedelta(hours=2, milliseconds=5),
    signature=b"\x00\xffsig",
    tags=("rush", "fragile"),
    seen={3, 1},
)
NOTE = Note("go", datetime(2025, 3, 4, 6, 0, tzinfo=UTC))


def register(dbos: DBOS, seen: list[tuple[Any, ...]]) -> Any:
    """The same application in every launch: a crash is the end of one launch."""

    @dbos.step()
    async def price(order: Order) -> Quote:
        total = sum((line.price * line.quantity for line in order.lines), Decimal(0))
        return Quote(total, datetime(2025, 3, 4, 5, 7, tzinfo=UTC))

    @dbos.workflow(serialization="portable")
    async def checkout(order: Order, *, discount: Decimal) -> Receipt:
        quote = await price(order)
        seen.append((order, discount, quote))
        await dbos.set_event("quote", quote)
        await dbos.write_stream("lines", order.lines[0])
        note = from_portable(Note, await dbos.recv("go", timeout_seconds=3600))
        await dbos.write_stream("lines", order.lines[1])
        await dbos.close_stream("lines")
        return Receipt(order.order_id, quote, note)

    return checkout


async def test_typed_values_round_trip_through_a_crash_in_portable_only_mode(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    settings = {"serializer": PortableJSONSerializer(), "allow_pickle": False}
    seen: list[tuple[Any, ...]] = []
    first = make_dbos(**settings)
    checkout = register(first, seen)
    async with first.launched():
        with SetWorkflowID("co-1"):
            await first.start_workflow(checkout, ORDER, discount=Decimal("0.05"))

        async def waiting_for_its_message() -> bool:
            return len(await steps_of(dbos_url, "co-1", "function_id")) >= 3

        await wait_until(waiting_for_its_message, what="the workflow reached recv")
    # The launch ended with the workflow waiting: its row is PENDING, as after a crash.
    assert (await query(dbos_url, "SELECT status FROM {t}workflow_status"))[0][0] == "PENDING"

    second = make_dbos(**settings)
    register(second, seen)
    async with second.launched():
        await second.send("co-1", NOTE, "go")
        handle = await second.retrieve_workflow("co-1")
        receipt = await handle.get_result()
        event = await second.get_event("co-1", "quote")
        streamed = [value async for value in second.read_stream("co-1", "lines")]

    expected_quote = Quote(Decimal("5.10"), datetime(2025, 3, 4, 5, 7, tzinfo=UTC))
    # The first run got the caller's objects; the recovered run read them back from JSON
    # by the annotations (arguments) and the step's return type (its checkpoint).
    assert len(seen) == 2
    assert seen[0] == seen[1] == (ORDER, Decimal("0.05"), expected_quote)
    assert isinstance(seen[1][0].lines[0], Line) and isinstance(seen[1][2], Quote)
    assert receipt == Receipt(ORDER.order_id, expected_quote, NOTE)
    # Events and streams hold plain JSON; the reader states the type.
    assert from_portable(Quote, event) == expected_quote
    assert [from_portable(Line, value) for value in streamed] == ORDER.lines

    # Every row is plain JSON, in the documented shapes.
    [(inputs, output)] = await query(
        dbos_url,
        "SELECT wi.inputs, wo.output FROM {t}workflow_input wi "
        "JOIN {t}workflow_output wo USING (workflow_uuid)",
    )
    assert json.loads(inputs) == {
        "positionalArgs": [
            {
                "order_id": "7f1d3a5e-3b0b-4c1e-9a57-2b9c1f0e8d11",
                "lines": [
                    {"sku": "apple", "price": "1.25", "quantity": 4},
                    {"sku": "pear", "price": "0.10", "quantity": 1},
                ],
                "placed": "2025-03-04T05:06:07.891234Z",
                "due": "2025-03-10",
                "tier": "gold",
                "window": 7200.005,
                "signature": "AP9zaWc=",
                "tags": ["rush", "fragile"],
                "seen": [1, 3],
            }
        ],
        "namedArgs": {"discount": "0.05"},
    }
    assert json.loads(output) == {
        "order_id": "7f1d3a5e-3b0b-4c1e-9a57-2b9c1f0e8d11",
        "quote": {"total": "5.10", "at": "2025-03-04T05:07:00.000Z"},
        "note": {"text": "go", "when": "2025-03-04T06:00:00.000Z"},
    }
    formats = {row[0] for row in await steps_of(dbos_url, "co-1", "serialization")}
    assert formats - {None} == {"portable_json"}  # set_event, streams: no output of their own


async def test_a_value_portable_json_cannot_store_is_refused_naming_where_before_any_write(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow(serialization="portable")
    async def takes(order: Any = None) -> None:
        return None

    @dbos.workflow(serialization="portable")
    async def sends(destination: str) -> str:
        try:
            await dbos.send(destination, {"lines": [Line("a", Decimal(1)), object()]})
        except DBOSException as refused:
            return str(refused)
        return "sent"

    bad = Order(**{**vars(ORDER), "lines": [Line("a", object())]})  # type: ignore[arg-type]
    async with dbos.launched():
        with pytest.raises(DBOSException, match=r"\(at args\[0\]\.lines\[0\]\.price\)$"):
            await takes(bad)
        with pytest.raises(DBOSException, match=r"object cannot be stored .*\(at order\)$"):
            await takes(order=object())
        assert await count_rows(dbos_url, "workflow_status") == 0
        assert await count_rows(dbos_url, "workflow_input") == 0
        with SetWorkflowID("sender"):
            refused = await sends("sender")
    assert "cannot be stored as portable JSON (at ['lines'][1])" in refused
    assert await count_rows(dbos_url, "notifications") == 0


async def test_stored_json_that_does_not_fit_the_annotation_ends_the_row_naming_the_field(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()
    queue = dbos.register_queue("typed")

    @dbos.workflow(serialization="portable")
    async def ships(order: Order) -> str:
        return "shipped"

    async with dbos.launched():
        # What another SDK might enqueue: an object whose order_id is not a UUID. Run from
        # its row, the arguments are read by the annotation, which refuses it by name.
        handle = await queue.enqueue(ships, {"order_id": "not-a-uuid"})  # type: ignore[arg-type]
        with pytest.raises(
            PortableWorkflowError, match=r"not-a-uuid.*UUID.*\(at order\.order_id\)"
        ):
            await handle.get_result()
    [(status,)] = await query(dbos_url, "SELECT status FROM {t}workflow_status")
    assert status == "ERROR"


async def test_a_pydantic_model_round_trips_when_pydantic_is_installed(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    if Payment is None:
        pytest.skip("pydantic is not installed (it is optional)")
    seen: list[Any] = []
    dbos = make_dbos(serializer=PortableJSONSerializer(), allow_pickle=False)
    queue = dbos.register_queue("payments")

    @dbos.workflow(serialization="portable")
    async def pay(payment: Payment) -> Payment:
        seen.append(payment)
        return payment

    payment = Payment(amount=Decimal("9.99"), at=datetime(2025, 1, 1, tzinfo=UTC))
    async with dbos.launched():
        # Enqueued: the body gets the argument read back from its row.
        result = await (await queue.enqueue(pay, payment)).get_result()
    assert seen == [payment] and isinstance(seen[0], Payment)
    assert result == payment and isinstance(result, Payment)
