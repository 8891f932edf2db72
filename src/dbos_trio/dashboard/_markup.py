"""HTML built from trusted templates and escaped values.

Invariant: every string a page shows that came from anywhere but this package's own
source — workflow ids, names, payloads, queue names, errors, query parameters — reaches
the page only through :func:`escape`. A template is a literal written here; :func:`html`
escapes every value it is given unless that value is already :class:`Html` (the output
of another ``html`` call). So a stored ``<script>`` is shown as text, never run, and
there is no way to splice raw text into a page except by writing it in this package.
"""

from __future__ import annotations

import html as _html
from collections.abc import Iterable
from typing import Any


class Html(str):
    """A fragment of markup known to be safe (built by :func:`html`)."""

    __slots__ = ()


def escape(value: Any) -> Html:
    """``value`` as text in markup (quotes too, so it is safe inside an attribute)."""
    if isinstance(value, Html):
        return value
    return Html(_html.escape("" if value is None else str(value), quote=True))


def html(template: str, *values: Any, **named: Any) -> Html:
    """``template`` (a literal of this package) with ``{}`` / ``{name}`` fields filled by
    escaped values."""
    return Html(
        template.format(*(escape(v) for v in values), **{k: escape(v) for k, v in named.items()})
    )


def join(parts: Iterable[Any], separator: str = "") -> Html:
    """Escaped ``parts`` (fragments kept as they are) joined by a literal ``separator``."""
    return Html(separator.join(escape(part) for part in parts))
