"""The embedded SQLite system database: the default when no URL is configured.

``backend.SQLiteSystemDatabase`` implements the system-database protocol on one stdlib
``sqlite3`` connection driven from the Trio thread; ``migrate`` creates and upgrades the
official SDKs' SQLite schema from ``migrations/sqlite``. See docs/sqlite.md.
"""
