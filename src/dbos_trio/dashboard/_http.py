"""The small slice of ASGI HTTP the dashboard needs: a parsed request, a response.

Invariant: a request body is read up to :data:`MAX_BODY` bytes and no further (a larger
one is refused with 413 before it is parsed), and every response carries the security
headers — a Content-Security-Policy that allows only this server's own script and style,
no framing, no sniffing, no referrer to other sites — so even a value that escaped
escaping could not run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl

import attrs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY = 64 * 1024
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # same-origin, not no-referrer: under no-referrer a browser sends ``Origin: null`` with
    # its form POSTs, which the CSRF check must refuse (a sandboxed frame sends it too).
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


class BodyTooLarge(Exception):
    pass


@attrs.frozen
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    cookies: dict[str, str]
    form: dict[str, str]


@attrs.define
class Response:
    status: int = 200
    body: str | bytes = ""
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = attrs.field(factory=list)

    def set_cookie(self, name: str, value: str, *, max_age: int | None = None) -> None:
        parts = [f"{name}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
        if max_age is not None:
            parts.append(f"Max-Age={max_age}")
        self.headers.append(("set-cookie", "; ".join(parts)))


def redirect(location: str) -> Response:
    return Response(303, "", headers=[("location", location)])


def _cookies(header: str) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:
        return {}
    return {key: morsel.value for key, morsel in jar.items()}


async def read_request(scope: Scope, receive: Receive) -> Request:
    """The request: its query, headers (lower-case names, last one wins), cookies and, for
    a form POST, its fields. Raises :class:`BodyTooLarge` past :data:`MAX_BODY`."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    body = b""
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        body += message.get("body", b"")
        if len(body) > MAX_BODY:
            raise BodyTooLarge
        more = message.get("more_body", False)
    form: dict[str, str] = {}
    if scope["method"] == "POST" and headers.get("content-type", "").startswith(
        "application/x-www-form-urlencoded"
    ):
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    query = dict(parse_qsl(scope.get("query_string", b"").decode("utf-8", "replace")))
    return Request(
        method=scope["method"],
        path=scope["path"],
        query=query,
        headers=headers,
        cookies=_cookies(headers.get("cookie", "")),
        form=form,
    )


async def send_response(send: Send, response: Response) -> None:
    body = response.body.encode() if isinstance(response.body, str) else response.body
    headers = [
        (b"content-type", response.content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS,
        *((k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers),
    ]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
