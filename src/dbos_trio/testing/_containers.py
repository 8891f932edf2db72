"""A throwaway PostgreSQL server in Docker, for tests on a machine without one.

Invariant: a test that asked for PostgreSQL either gets a server it may create databases
on, or is skipped with a reason saying what to do — never a connection error from deep
inside a fixture. Order: ``--dbos-postgres-url``, then ``$DBOS_TRIO_TEST_POSTGRES_URL``
(the one variable the plugin and this project's own tests read; its older name
``$DBOS_TEST_DATABASE_URL`` too), then a testcontainers
PostgreSQL if the ``dbos-trio[containers]`` extra is installed and a Docker daemon
answers, else skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

CONTAINER_IMAGE = "postgres:16"
INSTALL_HINT = "pip install 'dbos-trio[containers]'"


def docker_unavailable() -> str | None:
    """Why no container can be started here (``None`` if one can): testcontainers is
    missing, or no Docker daemon answers. Never raises; blocks for a ping at most."""
    try:
        import docker  # testcontainers' own client library
        import testcontainers.postgres  # noqa: F401
    except ImportError:
        return f"testcontainers is not installed ({INSTALL_HINT})"
    try:
        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as error:  # the docker client raises many kinds for "no daemon"
        return f"no Docker daemon answers ({type(error).__name__}: {error})"
    return None


@contextmanager
def postgres_container(image: str = CONTAINER_IMAGE) -> Iterator[str]:
    """Start a PostgreSQL container for the block; yield a superuser URL; remove it after.

    Errors from Docker propagate (ask :func:`docker_unavailable` first); the container is
    stopped on any exit, cancellation and errors included."""
    from testcontainers.postgres import PostgresContainer

    container = PostgresContainer(image, driver=None)
    container.start()
    try:
        url: str = container.get_connection_url()
        yield url
    finally:
        container.stop()
