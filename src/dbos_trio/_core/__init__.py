"""Pure logic: status sets, how an execution ended, retry and admission arithmetic, cron,
retention, filters and the validation rules of public calls.

Layer: the bottom, beside :mod:`dbos_trio.errors`. Invariant: no I/O and no clock — nothing
here imports trio, psycopg or sqlite3, or any dbos_trio module but ``errors`` and its own
siblings — so every rule is tested in microseconds, without a database, and the engine and
both backends decide by the same code.
"""
