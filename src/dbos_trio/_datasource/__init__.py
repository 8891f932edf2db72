"""Datasources: the application's own database, where ``@ds.transaction`` functions run
exactly once.

:mod:`.protocol` is what the engine sees (and the connection a transaction function gets,
with why it is that API); :mod:`.postgres` and :mod:`.sqlite` are the backends, on the same
drivers as the system database; :mod:`.migrate` keeps their checkpoint table as the
official SDK's datasources do, so either SDK reads the other's. See docs/transactions.md.
"""

from dbos_trio._datasource.protocol import IsolationLevel, Row, TransactionConnection

__all__ = ["IsolationLevel", "Row", "TransactionConnection"]
