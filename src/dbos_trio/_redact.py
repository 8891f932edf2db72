"""Secrets in database URLs: hidden in what we show, scrubbed from what libpq says.

Two tools, both pure and neither able to raise:

* :func:`redact_url` shows a URL (or a libpq ``key=value`` string) with every secret in
  it replaced by ``***``, for ``repr`` and messages that name the URL.
* :class:`Scrubber` knows the secrets of the configured URLs and replaces them by
  ``***`` in any text — chiefly the text of a driver error. libpq echoes what it could
  not parse (``invalid percent-encoded token: "S3cret%ZZ"``, a whole URI with an
  unterminated ``[``), and a password with an unencoded ``@`` or ``/`` is read by libpq as
  part of the host, port or database name, which its errors then quote. So the scrubber
  is applied wherever a driver or libpq error text becomes an exception message, a log
  record or CLI output.

Invariants, and why:

* Redaction errs towards hiding: a URL whose shape cannot be explained has everything
  between ``://`` and its last ``@`` hidden, and any query value whose key, percent-
  decoded, names a secret (``password``, ``sslpassword``, ``pass%77ord``, ...) is hidden
  wherever it sits. A password may contain any character, unencoded, so the userinfo
  runs to the last ``@`` that is followed by a plausible host part, not the first.
* The scrubber's secrets are each secret in every form it may be echoed in: as written,
  percent-decoded, as Python's ``repr`` escapes it, the whole userinfo, and the pieces
  between URL delimiters (libpq reads ``S3c@ret`` as a password ``S3c`` and a host
  ``ret@...``). Pieces shorter than :data:`MIN_PIECE` are not scrubbed on their own: too
  short to identify a secret, they would only mangle the message.
* Everything here is total: any ``str`` in, a ``str`` out, no exception. A redactor that
  raised would turn a bad URL into a traceback that prints it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple
from urllib.parse import unquote

REDACTED = "***"
MIN_PIECE = 4
"""The shortest piece of a secret (between URL delimiters) that is scrubbed on its own."""

SECRET_KEYS = frozenset(
    {"password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"}
)
"""libpq's parameters whose value is a secret (keys that merely *contain* ``password``,
``passwd``, ``secret`` or ``token`` count too: hiding a harmless value costs nothing)."""
_SECRET_WORDS = ("password", "passwd", "secret", "token")

# Every parameter libpq accepts in a URI's query string (from the libpq documentation,
# "Parameter Key Words"). Used only to tell a real query string from text in a password.
_LIBPQ_KEYWORD_LIST = """
    host hostaddr port dbname user password passfile require_auth channel_binding
    connect_timeout client_encoding options application_name fallback_application_name
    keepalives keepalives_idle keepalives_interval keepalives_count tcp_user_timeout
    replication gssencmode sslmode requiressl sslnegotiation sslcompression sslcert sslkey
    sslkeylogfile sslpassword sslcertmode sslrootcert sslcrl sslcrldir sslsni requirepeer
    ssl_min_protocol_version ssl_max_protocol_version min_protocol_version
    max_protocol_version krbsrvname gsslib gssdelegation service target_session_attrs
    load_balance_hosts scram_client_key scram_server_key oauth_issuer oauth_client_id
    oauth_client_secret oauth_scope"""
LIBPQ_KEYWORDS = frozenset(_LIBPQ_KEYWORD_LIST.split())

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# One host of a host list: a bracketed IPv6 address or a name (percent-encoded socket
# directories included), then an optional port; none of them holds an '@'.
_HOST = r"(?:\[[^\]\[@/?]*\]|[^\[\]@/?,:]*)(?::[^@/?,\[\]]*)?"
# What follows the userinfo's '@': hosts, an optional /dbname, an optional ?query (which
# may hold anything, an '@' included).
_HOST_PART = re.compile(rf"{_HOST}(?:,{_HOST})*(?:/[^@?]*)?(?P<query>\?.*)?", re.DOTALL)
# A query parameter: its key, and its value up to the next '&' that starts another
# key=value pair (an '&' inside a password is not one), or the end.
_QUERY_PARAM = re.compile(
    r"(?P<lead>[?&](?P<key>[^&=?]*)=)(?P<value>.*?)(?=&[^&=]*=|\Z)", re.DOTALL
)
# A libpq key=value parameter whose key names a secret: a quoted value with backslash
# escapes (an unterminated one runs to the end), or an unquoted one up to whitespace.
_PARAM = re.compile(
    r"(?P<lead>(?<![\w.])(?P<key>[A-Za-z_][\w.]*)\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*(?:'|\\?\Z)|[^\s']\S*|(?=\s|\Z))",
    re.DOTALL,
)
# A postgres URL quoted inside some text (a libpq message echoes the URI it rejected).
_URL_IN_TEXT = re.compile(r"(?i)\bpostgres(?:ql)?(?:\+\w+)?://[^\s\"'<>]*")
# Where libpq (or a reader) may cut a secret into pieces.
_DELIMITERS = re.compile(r"[@/?#:&=,;\[\]\s\"'\\]+")


def names_a_secret(key: str) -> bool:
    """Whether a parameter key, percent-decoded and case-folded, names a secret."""
    name = unquote(key, errors="replace").strip().casefold()
    return name in SECRET_KEYS or any(word in name for word in _SECRET_WORDS)


class _UrlParts(NamedTuple):
    head: str  # the scheme and '://'
    userinfo: str | None  # between head and the '@' that ends it; None without one
    rest: str  # after that '@' (or after head)
    explained: bool  # False: no '@' fits, and userinfo runs to the last one


def _split_url(url: str) -> _UrlParts | None:
    scheme = _SCHEME.match(url)
    if scheme is None:
        return None
    head, body = url[: scheme.end()], url[scheme.end() :]
    ats = [i for i, c in enumerate(body) if c == "@"]
    if not ats:
        return _UrlParts(head, None, body, True)
    fits = [
        (at, match)
        for at in ats
        if "/" not in body[:at].split(":", 1)[0]  # a user name has no '/'; a password may
        and (match := _HOST_PART.fullmatch(body, at + 1)) is not None
    ]
    for index, (at, match) in enumerate(fits):
        # Any later '@' that also fits lies in this one's query: this one is the userinfo's
        # only if that query really is one (libpq keywords), not text of a password.
        if index == len(fits) - 1 or _is_libpq_query(match["query"]):
            return _UrlParts(head, body[:at], body[at + 1 :], True)
    if _HOST_PART.fullmatch(body):
        return _UrlParts(head, None, body, True)  # the '@'s are in the query string
    return _UrlParts(head, body[: ats[-1]], body[ats[-1] + 1 :], False)


def _is_libpq_query(query: str | None) -> bool:
    # Every '&'-separated part must be key=value with a libpq keyword: a password such as
    # '@?' puts "@host:5432/db?sslmode=require" after its '?', whose last part alone would
    # read as a libpq query.
    if not query:
        return False
    # Split where _QUERY_PARAM does: at an '&' that starts another key=value pair.
    for part in re.split(r"&(?=[^&=]*=)", query.removeprefix("?")):
        key, equals, _ = part.partition("=")
        if not equals or unquote(key, errors="replace") not in LIBPQ_KEYWORDS:
            return False
    return True


def _redact_query(text: str) -> str:
    def hide(match: re.Match[str]) -> str:
        return match["lead"] + REDACTED if names_a_secret(match["key"]) else match[0]

    return _QUERY_PARAM.sub(hide, text)


def _redact_params(text: str) -> str:
    def hide(match: re.Match[str]) -> str:
        return match["lead"] + REDACTED if names_a_secret(match["key"]) else match[0]

    return _PARAM.sub(hide, text)


def _redact(url: str) -> str:
    parts = _split_url(url)
    if parts is None:
        return _redact_params(url)
    userinfo = ""
    if parts.userinfo is not None:
        if not parts.explained:
            userinfo = REDACTED + "@"
        elif ":" in parts.userinfo:
            userinfo = parts.userinfo.split(":", 1)[0] + ":" + REDACTED + "@"
        else:
            userinfo = parts.userinfo + "@"
    return parts.head + userinfo + _redact_query(parts.rest)


def redact_url(url: object) -> str:
    """``url`` with every secret replaced by ``***``, for ``repr`` and messages.

    Takes ``postgresql://``/``postgres://`` URLs of any shape (passwords with unencoded
    ``@ / # ? :`` or spaces, invalid percent-escapes, secrets in the query string under any
    key that names one, multi-host lists), libpq ``key=value`` strings (quoted or not) and
    anything else (returned with any ``key=value`` secret hidden). ``None`` is ``"None"``.
    Never raises: what cannot be shown safely is shown as ``***``.
    """
    if url is None:
        return "None"
    if not isinstance(url, str):
        return REDACTED
    try:
        return _redact(url)
    except Exception:  # a bug here must not print the URL in a traceback
        return REDACTED


# --- the secrets of a URL, and the scrubber ----------------------------------------------


def _raw_secrets(url: str) -> Iterator[tuple[str, bool]]:
    """The secret values ``url`` holds, as written, each with whether its pieces count
    (not for a whole userinfo, whose user name is no secret, unless nothing in it is
    known to be the password)."""
    parts = _split_url(url)
    if parts is None:
        for match in _PARAM.finditer(url):
            if names_a_secret(match["key"]):
                value = match["value"]
                yield value, True
                if value.startswith("'"):
                    inner = value[1:-1] if value.endswith("'") and len(value) > 1 else value[1:]
                    yield inner, True
                    yield re.sub(r"\\(.)", r"\1", inner, flags=re.DOTALL), True
        return
    if parts.userinfo is not None:
        if not parts.explained:
            yield parts.userinfo, True
        elif ":" in parts.userinfo and parts.userinfo.split(":", 1)[1]:
            yield parts.userinfo, False
            yield parts.userinfo.split(":", 1)[1], True
    for match in _QUERY_PARAM.finditer(parts.rest):
        if names_a_secret(match["key"]):
            yield match["value"], True


def _forms(secret: str, pieces: bool) -> Iterator[str]:
    """``secret`` in every form a message may show it in, and its longer pieces."""
    decoded = unquote(secret, errors="replace")
    for form in {secret, decoded}:
        yield form
        yield from _python_escapes(form)
        if pieces:
            yield from (p for p in _DELIMITERS.split(form) if len(p) >= MIN_PIECE)


def _python_escapes(form: str) -> Iterator[str]:
    """``form`` as it shows inside the ``repr`` of a longer string (an exception's, say)."""
    shown = repr(form)
    yield shown[1:-1]
    if shown[0] == '"':
        # Alone it is shown in double quotes; in a text that also holds a '"', Python
        # picks single quotes and escapes the form's own.
        yield shown[1:-1].replace("'", "\\'")


def secrets_of(urls: Iterable[str | None]) -> frozenset[str]:
    """Every string a message must not show for these URLs (see the module docs)."""
    found: set[str] = set()
    for url in urls:
        if not isinstance(url, str):
            continue
        try:
            for raw, pieces in _raw_secrets(url):
                found.update(form for form in _forms(raw, pieces) if form and form != REDACTED)
        except Exception:  # never raise; the URL's own text is the safest stand-in
            found.add(url)
    return frozenset(found)


class Scrubber:
    """Replaces each secret of the configured URLs by ``***`` in any text.

    ``scrubber(text)`` also redacts any postgres URL and any ``password=`` parameter the
    text quotes, configured or not. Calling it never raises; an empty scrubber
    (:data:`NO_SECRETS`) still does the second part. Combine two with ``|``.
    """

    __slots__ = ("_pattern", "secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = frozenset(s for s in secrets if s)
        # Longest first, so a secret is replaced whole rather than piece by piece.
        ordered = sorted(self.secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @classmethod
    def for_urls(cls, *urls: str | None) -> Scrubber:
        """A scrubber for the secrets of ``urls`` (None entries are skipped)."""
        return cls(secrets_of(urls))

    @classmethod
    def for_values(cls, *values: str) -> Scrubber:
        """A scrubber for secret values given on their own (a ``password=`` keyword)."""
        return cls(form for value in values for form in _forms(value, True))

    def __or__(self, other: Scrubber) -> Scrubber:
        return Scrubber(self.secrets | other.secrets)

    def __call__(self, text: object) -> str:
        """``str(text)`` with every secret replaced by ``***``."""
        try:
            shown = str(text)
        except Exception:
            return f"<{type(text).__name__} whose text could not be shown>"
        try:
            if self._pattern is not None:
                shown = self._pattern.sub(REDACTED, shown)
            shown = _URL_IN_TEXT.sub(lambda m: redact_url(m[0]), shown)
            return _redact_params(shown)
        except Exception:
            return REDACTED

    def __repr__(self) -> str:
        return f"<Scrubber of {len(self.secrets)} secrets>"


NO_SECRETS = Scrubber()
"""A scrubber that knows no secret (it still redacts URLs and ``password=`` in a text)."""
