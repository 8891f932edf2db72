"""The web-service how-to's program, run as the page shows it, over real HTTP.

``service.py`` is read from ``docs/how-to/web-service.md`` and run in a fresh directory
(its system database is the SQLite default there), on a free port (``BIND``). A POST
enqueues a job, a repeated POST returns the same job, a GET reports it finished with its
result, an unknown id is a 404, and SIGTERM stops the service cleanly (exit status 0).
Skipped where Quart-Trio or Hypercorn is not installed: they are the page's choice of web
stack, not dependencies of dbos_trio.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("quart_trio", reason="the how-to uses Quart-Trio (pip install quart-trio)")
pytest.importorskip("hypercorn", reason="the how-to uses Hypercorn (pip install hypercorn)")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "web-service.md"


def _program() -> str:
    found = re.search(r'^```python title="service.py"\n(.*?)^```$', PAGE.read_text(), re.S | re.M)
    assert found, "the how-to has no service.py"
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _request(method: str, url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _wait_until_serving(base: str, process: subprocess.Popen[bytes]) -> None:
    # Polling a socket for readiness, not measuring: the bound only stops a hung start.
    for _ in range(600):
        assert process.poll() is None, "the service exited before it served"
        try:
            _request("GET", f"{base}/jobs/none")
            return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    raise AssertionError("the service never answered")


@pytest.mark.slow
def test_the_service_enqueues_reports_and_stops_on_sigterm(tmp_path: Path) -> None:
    (tmp_path / "service.py").write_text(_program())
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DBOS_")}
    env["BIND"] = f"127.0.0.1:{port}"
    base = f"http://127.0.0.1:{port}"
    service = subprocess.Popen([sys.executable, "service.py"], cwd=tmp_path, env=env)
    try:
        _wait_until_serving(base, service)
        assert _request("POST", f"{base}/images/cat.png") == (202, {"id": "thumbs-cat.png"})
        assert _request("POST", f"{base}/images/cat.png") == (202, {"id": "thumbs-cat.png"})
        for _ in range(600):
            code, body = _request("GET", f"{base}/jobs/thumbs-cat.png")
            if body.get("status") == "SUCCESS":
                break
            time.sleep(0.1)
        assert (code, body) == (
            200,
            {
                "id": "thumbs-cat.png",
                "status": "SUCCESS",
                "thumbnails": ["cat.png@64px", "cat.png@256px"],
            },
        )
        assert _request("GET", f"{base}/jobs/nope") == (404, {"error": "no such job"})
        service.send_signal(signal.SIGTERM)
        assert service.wait(timeout=60) == 0
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()
