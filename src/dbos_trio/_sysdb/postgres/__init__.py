"""The PostgreSQL system-database backend: the shared SQL implementation on the Trio-native
connection layer (:mod:`dbos_trio._pg`), with LISTEN/NOTIFY, migrations and psycopg's errors
mapped once.

Layer: backends. Imports :mod:`dbos_trio._pg`, the protocol and the shared SQL code.
"""
