"""The official dbos 3.4 client reads the rows of a workflow taking and returning typed
portable values (dataclasses, datetimes, decimals, UUIDs, enums, bytes) as the documented
plain JSON (docs/input-and-trust.md#typed-portable-values)."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from interop_support import run_official

from dbos_trio import DBOS, Config, SetWorkflowID

pytestmark = pytest.mark.interop


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


async def test_the_official_client_reads_typed_rows_as_the_documented_json(
    url: str, official_python: Path
) -> None:
    dbos = DBOS(Config(app_name="portable-types-interop", database_url=url, app_version="v1"))

    @dbos.workflow(name="basket_total", serialization="portable")
    async def basket_total(items: list[Item]) -> Basket:
        return Basket(items, sum((item.price for item in items), Decimal(0)))

    async with dbos.launched():
        with SetWorkflowID("basket-1"):
            assert (await basket_total([ITEM])).total == Decimal("12.30")
        typed = await (await dbos.retrieve_workflow("basket-1")).get_result()
    assert typed == Basket([ITEM], Decimal("12.30"))

    read = await run_official(official_python, "client-read", url, "basket-1")
    item = {
        "item_id": "00000000-0000-0000-0000-000000000001",
        "kind": "book",
        "price": "12.30",
        "added": "2025-05-06T07:08:09.000Z",
        "cover": "AQ==",
    }
    assert read["result"] == {"items": [item], "total": "12.30"}
    assert read["input"] == {"args": [[item]], "kwargs": {}}
