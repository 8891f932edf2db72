"""A program that never touched logging sees the launch line and its failures on stderr,
as the official SDK's users do (``Config.log_level``), and one that configured logging
keeps its own configuration.

Each case runs a fresh interpreter, as a user's program is: inside pytest the root logger
always has pytest's capturing handler, so launch would rightly leave logging alone.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """
import logging, sys, trio
from dbos_trio import DBOS, Config

SETUP = sys.argv[2]
if SETUP == "basic":
    logging.basicConfig(format="ROOT %(levelname)s %(message)s", level=logging.INFO)
level = None if SETUP == "none" else "INFO"
dbos = DBOS(Config(app_name="loud", database_url=sys.argv[1], log_level=level))

@dbos.step()
async def charge() -> None:
    raise ValueError("card declined")

@dbos.workflow()
async def checkout() -> None:
    await charge()

async def main() -> None:
    async with dbos.launched():
        try:
            await checkout()
        except ValueError:
            pass

trio.run(main)
"""


def run(tmp_path: Path, setup: str) -> str:
    script = tmp_path / "loud.py"
    script.write_text(PROGRAM)
    url = f"sqlite:///{tmp_path / f'{setup}.sqlite'}"
    done = subprocess.run(
        [sys.executable, str(script), url, setup],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stderr


def test_an_unconfigured_program_logs_its_launch_failures_and_shutdown(tmp_path: Path) -> None:
    stderr = run(tmp_path, "default")
    assert "INFO" in stderr and "launched loud version" in stderr, stderr
    assert "failed: ValueError: card declined" in stderr
    assert "shut down loud" in stderr


def test_log_level_none_leaves_logging_alone(tmp_path: Path) -> None:
    stderr = run(tmp_path, "none")
    assert "launched loud" not in stderr  # INFO: nobody shows it
    # Warnings still reach stderr through Python's last-resort handler.
    assert "card declined" in stderr


def test_an_application_s_own_configuration_wins(tmp_path: Path) -> None:
    stderr = run(tmp_path, "basic")
    lines = [line for line in stderr.splitlines() if "launched loud" in line]
    assert len(lines) == 1 and lines[0].startswith("ROOT INFO"), stderr
