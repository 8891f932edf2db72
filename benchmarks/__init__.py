"""Benchmark harness: dbos_trio against the official ``dbos`` package and the PostgreSQL floor.

``python -m benchmarks`` runs every scenario of ``shared/docs/BENCHMARKS.md`` (S1-S7), and S8
(datasource transactions), for dbos_trio, for the official package (in a virtualenv of its
own) and for the pgbench floor, interleaved, and prints one table of medians with the ratios.
See ``benchmarks/README.md``.

Every module here except the two drivers imports only the standard library and psycopg, because
the official driver runs under a different virtualenv than the runner.
"""
