"""Who may use the dashboard, and which POSTs are the operator's own.

Invariants:

* **Token.** With a token configured, every request must carry it (``Authorization:
  Bearer``, or the cookie set when a browser first opens ``/?token=...``); compared in
  constant time. Without one, the server only binds a loopback address (the CLI and
  ``serve_dashboard`` refuse anything else), and requests must name a loopback host in
  ``Host`` — a page on another site that rebinds its DNS name to 127.0.0.1 is refused.
* **CSRF.** Every action is a POST carrying a form field derived (HMAC with a per-server
  secret) from a random cookie this server set, and, when the browser sends ``Origin``,
  from this server's own origin. Another site can make a browser POST here, but can read
  neither the cookie nor a page, so it cannot produce the field.
* **Read-only.** A read-only dashboard renders no action and refuses every POST.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit

TOKEN_COOKIE = "dbos_dashboard_token"
CSRF_COOKIE = "dbos_dashboard_csrf"
CSRF_FIELD = "csrf"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address to bind or to be addressed by) is this machine."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The host of a ``Host`` header, without its port (IPv6 brackets kept off)."""
    if host_header.startswith("["):
        return host_header[1:].split("]", 1)[0]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


class Guard:
    """The checks every request passes; see the module docs."""

    def __init__(self, *, token: str | None, read_only: bool) -> None:
        self.token = token or None
        self.read_only = read_only
        self._secret = secrets.token_bytes(32)

    def token_ok(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
        if self.token is None:
            return True
        given = cookies.get(TOKEN_COOKIE, "")
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            given = authorization[7:].strip()
        return hmac.compare_digest(given.encode(), self.token.encode())

    def host_ok(self, headers: Mapping[str, str]) -> bool:
        """Without a token, only a loopback ``Host`` (DNS-rebinding defence)."""
        if self.token is not None:
            return True
        return is_loopback(host_name(headers.get("host", "")))

    def new_csrf_cookie(self) -> str:
        return secrets.token_urlsafe(24)

    def csrf_field(self, cookie: str) -> str:
        """The form field that proves a POST came from a page this server rendered."""
        return hmac.new(self._secret, cookie.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(
        self, headers: Mapping[str, str], cookies: Mapping[str, str], form: Mapping[str, str]
    ) -> bool:
        cookie = cookies.get(CSRF_COOKIE, "")
        field = form.get(CSRF_FIELD, "")
        if not cookie or not field:
            return False
        if not hmac.compare_digest(field.encode(), self.csrf_field(cookie).encode()):
            return False
        origin = headers.get("origin")
        if origin is not None and origin != "null":
            return urlsplit(origin).netloc == headers.get("host", "")
        return origin is None
