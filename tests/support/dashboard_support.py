"""Helpers of the dashboard tests: an HTTP client on Trio sockets, and a demo application
whose stored strings are hostile (``<script>`` in ids, names and payloads).

The client speaks plain HTTP/1.1 with ``Connection: close`` and keeps cookies like a
browser would, so the tests see exactly what a browser is sent.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any
from urllib.parse import urlencode, urlsplit

import attrs
import trio

from dbos_trio import DBOS, Config

SCRIPT = '<script>alert("x")</script>'
HOSTILE_ID = f"wf-{SCRIPT}"
HOSTILE_NAME = f"orders.{SCRIPT}"


@attrs.frozen
class Reply:
    status: int
    headers: dict[str, str]
    cookies: dict[str, str]
    text: str


@attrs.define
class Browserless:
    """A cookie-keeping HTTP client of one dashboard (``base``: ``http://host:port``)."""

    base: str
    cookies: dict[str, str] = attrs.field(factory=dict)

    async def request(
        self,
        method: str,
        path: str,
        *,
        form: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        keep_cookies: bool = True,
    ) -> Reply:
        split = urlsplit(self.base)
        host, port = split.hostname or "127.0.0.1", split.port or 80
        body = urlencode(form).encode() if form is not None else b""
        sent = {"host": f"{host}:{port}", "connection": "close"}
        if self.cookies:
            sent["cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if form is not None:
            sent["content-type"] = "application/x-www-form-urlencoded"
        sent["content-length"] = str(len(body))
        sent.update({k.lower(): v for k, v in (headers or {}).items()})
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items())
        stream = await trio.open_tcp_stream(host, port)
        async with stream:
            await stream.send_all(head.encode("latin-1") + b"\r\n" + body)
            raw = b""
            while chunk := await stream.receive_some(65536):
                raw += chunk
        header_bytes, _, payload = raw.partition(b"\r\n\r\n")
        lines = header_bytes.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        received: dict[str, str] = {}
        cookies: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "set-cookie":
                key, _, rest = value.partition("=")
                cookies[key] = rest.split(";", 1)[0]
            else:
                received[name] = value
        if keep_cookies:
            self.cookies.update(cookies)
        return Reply(status, received, cookies, payload.decode("utf-8", "replace"))

    async def get(self, path: str, **kwargs: Any) -> Reply:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, form: dict[str, str], **kwargs: Any) -> Reply:
        return await self.request("POST", path, form=form, **kwargs)


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert match, "the page has no CSRF field"
    return match.group(1)


def demo_app(url: str, app_name: str = "dash-demo") -> tuple[DBOS, dict[str, Any]]:
    """A DBOS with the demo workflows (see the module docs); returns it and its functions."""
    dbos = DBOS(Config(app_name=app_name, database_url=url, app_version="v1"))

    @dbos.step(name="charge")
    async def charge(amount: int) -> dict[str, Any]:
        await trio.sleep(0.02)  # a step that takes time, for the timeline
        return {"charged": amount, "note": SCRIPT}

    @dbos.step(name="fails-then-not")
    async def explode() -> None:
        raise ValueError(f"bad {SCRIPT}")

    @dbos.workflow(name="child")
    async def child(n: int) -> int:
        await trio.sleep(0.01)
        return n * 2

    @dbos.workflow(name=HOSTILE_NAME, serialization="portable")
    async def order(amount: int, memo: str) -> str:
        await charge(amount)
        with contextlib.suppress(ValueError):
            await explode()
        await dbos.set_event(f"state-{SCRIPT}", {"v": SCRIPT})
        await dbos.write_stream("progress", f"50% {SCRIPT}")
        await dbos.write_stream("progress", "100%")
        handle = await dbos.start_workflow(child, 21)
        await handle.get_result()
        return f"done {memo}"

    @dbos.workflow(name="waiter")
    async def waiter() -> Any:
        return await dbos.recv("go", timeout_seconds=3600)

    @dbos.workflow(name="pickled")
    async def pickled(value: Any) -> Any:
        return value

    @dbos.workflow(name="declined")
    async def declined(order_id: str) -> None:
        await charge(1)
        raise ValueError(f"card declined for {order_id}")

    payments = dbos.register_queue("payments", global_concurrency=4, worker_concurrency=2)

    @dbos.workflow(name="nightly-report")
    async def nightly(scheduled_time: Any, context: Any) -> None:
        pass

    return dbos, {
        "payments": payments,
        "nightly": nightly,
        "order": order,
        "waiter": waiter,
        "pickled": pickled,
        "child": child,
        "declined": declined,
    }
