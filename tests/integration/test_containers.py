"""The optional throwaway PostgreSQL in Docker (the ``containers`` extra, testcontainers).

``tests/support/pg_support.py`` starts one when no server is configured and nothing
answers on the default address. This checks that path where it can run — testcontainers
installed and a Docker daemon answering — and is skipped, saying which is missing,
everywhere else: a server it starts must accept a launch and run a workflow.
"""

from __future__ import annotations

import pytest

from dbos_trio import DBOS, Config

from support import pg_support


def _docker_answers() -> str | None:
    """None if a container can be started here, else why not."""
    try:
        import docker  # installed with testcontainers
        import testcontainers.postgres  # noqa: F401
    except ImportError:
        return "testcontainers is not installed (pip install -e '.[containers]')"
    try:
        docker.from_env(timeout=5).ping()
    except Exception as error:
        return f"no Docker daemon answers: {error}"
    return None


@pytest.fixture
def container_url() -> str:
    missing = _docker_answers()
    if missing:
        pytest.skip(missing)
    return pg_support._container_url()


@pytest.mark.slow
async def test_a_throwaway_postgres_in_docker_runs_a_workflow(container_url: str) -> None:
    url = container_url
    dbos = DBOS(Config(app_name="containers", database_url=url))

    @dbos.workflow()
    async def double(n: int) -> int:
        return 2 * n

    async with dbos.launched():
        assert await double(21) == 42
        status = await dbos.list_workflows()
        assert [s.status for s in status] == ["SUCCESS"]
