"""The official dbos 3.4 client reads the rows of a workflow taking and returning typed
portable values (dataclasses, datetimes, decimals, UUIDs, enums, bytes) as the documented
plain JSON (docs/input-and-trust.md#typed-portable-values)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from interop_support import run_official
from typed_basket import ITEM, ITEM_JSON, Basket, register_basket_total

from dbos_trio import DBOS, Config, SetWorkflowID

pytestmark = pytest.mark.interop


async def test_the_official_client_reads_typed_rows_as_the_documented_json(
    url: str, official_python: Path
) -> None:
    dbos = DBOS(Config(app_name="portable-types-interop", database_url=url, app_version="v1"))

    basket_total = register_basket_total(dbos)

    async with dbos.launched():
        with SetWorkflowID("basket-1"):
            assert (await basket_total([ITEM])).total == Decimal("12.30")
        typed = await (await dbos.retrieve_workflow("basket-1")).get_result()
    assert typed == Basket([ITEM], Decimal("12.30"))

    read = await run_official(official_python, "client-read", url, "basket-1")
    assert read["result"] == {"items": [ITEM_JSON], "total": "12.30"}
    assert read["input"] == {"args": [[ITEM_JSON]], "kwargs": {}}
