"""The typed workflow both SDK-reading interop tests run (the official Python client's and
the TypeScript SDK's), and the JSON the documentation says each of them reads back
(docs/input-and-trust.md#typed-portable-values)."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from dbos_trio import DBOS


class Kind(enum.Enum):
    BOOK = "book"


@dataclass
class Item:
    item_id: uuid.UUID
    kind: Kind
    price: Decimal
    added: datetime
    cover: bytes


@dataclass
class Basket:
    items: list[Item]
    total: Decimal


ITEM = Item(
    uuid.UUID(int=1),
    Kind.BOOK,
    Decimal("12.30"),
    datetime(2025, 5, 6, 7, 8, 9, tzinfo=UTC),
    b"\x01",
)
# ITEM as stored: an object, the UUID a string, the Enum its value, the Decimal a string,
# the datetime an ISO string, the bytes base64.
ITEM_JSON: dict[str, Any] = {
    "item_id": "00000000-0000-0000-0000-000000000001",
    "kind": "book",
    "price": "12.30",
    "added": "2025-05-06T07:08:09.000Z",
    "cover": "AQ==",
}


def register_basket_total(dbos: DBOS) -> Any:
    """Register ``basket_total(items) -> Basket`` (portable serialization) on ``dbos``."""

    @dbos.workflow(name="basket_total", serialization="portable")
    async def basket_total(items: list[Item]) -> Basket:
        return Basket(items, sum((item.price for item in items), Decimal(0)))

    return basket_total
