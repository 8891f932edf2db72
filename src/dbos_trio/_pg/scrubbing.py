"""psycopg errors with the secrets of the connection's URL scrubbed out of their text.

libpq echoes the parts of a URL it cannot parse — a password among them (see
:mod:`dbos_trio._redact`) — and a traceback prints every exception of the chain. So an
error whose text may hold a secret is replaced, where it arises, by a *scrubbed copy*:
the same class (so it is mapped to the same kind), the scrubbed text, the original
traceback (frames show code, not values), and no ``__cause__`` or ``__context__``: the
original never travels further. The copy carries no SQLSTATE or diagnostics; callers that
decide by SQLSTATE (:func:`.errors.map_error`) look at the original first.

Raise a copy outside the ``except`` block that caught the original: raised inside, it
would get the original as its ``__context__``.
"""

from __future__ import annotations

import psycopg

from dbos_trio._redact import Scrubber


def scrubbed(error: psycopg.Error, scrub: Scrubber) -> psycopg.Error:
    """A copy of ``error`` whose text went through ``scrub``, chained to nothing."""
    text = scrub(error)
    try:
        copy = type(error)(text)
    except Exception:  # a subclass with a constructor of its own: keep the family
        family = (
            psycopg.OperationalError
            if isinstance(error, psycopg.OperationalError)
            else psycopg.Error
        )
        copy = family(text)
    copy.__traceback__ = error.__traceback__
    copy.__cause__ = None
    copy.__context__ = None
    copy.__suppress_context__ = True
    return copy
