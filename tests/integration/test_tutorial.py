"""The tutorial's programs, run exactly as the page shows them, with the output it shows.

The code is read from ``docs/tutorial.md`` (every fenced block with a ``title="..."``;
the testing how-to's ``test_every.py`` too),
written to a fresh directory and run there as a user would run it: ``python app.py``,
``python -m pytest``. A program edited on the page is tested as edited, and output the
page promises is compared with what the program prints. The crash-and-resume step kills
a real process with SIGKILL while the workflow sleeps, and relaunches it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
TUTORIAL = DOCS / "tutorial.md"
TESTING_HOW_TO = DOCS / "how-to" / "testing.md"
BLOCK = re.compile(r'^```\w+ title="(?P<name>[^"]+)"\n(?P<body>.*?)^```$', re.S | re.M)
CONSOLE = re.compile(r"^```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)^```$", re.S | re.M)


def _files(page: Path = TUTORIAL) -> dict[str, str]:
    return {m.group("name"): m.group("body") for m in BLOCK.finditer(page.read_text())}


def _documented_output(command: str) -> str:
    for match in CONSOLE.finditer(TUTORIAL.read_text()):
        if match.group("command") == command:
            return match.group("output")
    raise AssertionError(f"the tutorial shows no output for {command!r}")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    for name, body in _files().items():
        (tmp_path / name).write_text(body)
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The tutorial's programs use the embedded SQLite default: no URL from the environment.
    env.pop("DBOS_SYSTEM_DATABASE_URL", None)
    env.pop("DBOS_DATABASE_URL", None)
    return env


def _run(workdir: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=workdir,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_tutorial_has_its_programs() -> None:
    assert {"app.py", "queue_app.py", "resume_app.py", "messages_app.py"} <= set(_files())
    assert {"conftest.py", "pytest.ini", "test_reminders.py"} <= set(_files())


@pytest.mark.parametrize("program", ["app.py", "messages_app.py"])
def test_a_program_prints_what_the_tutorial_shows(workdir: Path, program: str) -> None:
    assert _run(workdir, program) == _documented_output(f"python {program}")


def test_the_queue_program_runs_every_order(workdir: Path) -> None:
    lines = _run(workdir, "queue_app.py").splitlines()
    assert lines == [f"order-{n} packed order-{n}" for n in range(5)]


def _shape(text: str) -> str:
    """CLI output with what differs between runs (times, durations, widths) abstracted."""
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "<time>", text)
    text = re.sub(r"\b\d+(\.\d+)? (ms|s|min)\b", "<took>", text)
    text = re.sub(r"-{2,}", "--", text)
    return re.sub(r"[ \t]+", " ", text)


def test_the_cli_sample_is_what_the_cli_prints(workdir: Path) -> None:
    _run(workdir, "queue_app.py")
    command = "dbos-trio workflow list -s sqlite:///shop.sqlite"
    shown = _documented_output(command).splitlines()
    assert shown[-1] == "..."  # the page shows the first row of five
    printed = _run(workdir, "-m", "dbos_trio.cli", *command.split()[1:]).splitlines()
    assert [_shape(line) for line in printed[: len(shown) - 1]] == [
        _shape(line) for line in shown[:-1]
    ]


def test_ctrl_c_stops_the_resume_program_without_a_traceback(workdir: Path) -> None:
    run = subprocess.Popen(
        [sys.executable, "-u", "resume_app.py"],
        cwd=workdir,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert run.stdout is not None
    assert run.stdout.readline() == "email to ann: welcome!\n"
    assert run.stdout.readline().startswith("sleeping 10 s")
    run.send_signal(signal.SIGINT)  # as Ctrl-C does, mid-sleep
    rest, errors = run.communicate(timeout=60)
    assert (run.returncode, rest) == (0, "stopped: run me again to resume\n")
    # No traceback: stderr holds only the library's default log (launch, then shutdown).
    assert "Traceback" not in errors and "KeyboardInterrupt" not in errors
    assert all("(dbos_trio" in line for line in errors.splitlines()), errors
    assert "shut down" in errors
    shown = _documented_output("python resume_app.py")
    assert "^Cstopped: run me again to resume" in shown


@pytest.mark.slow
def test_the_resume_program_resumes_after_sigkill_without_repeating_a_step(
    workdir: Path,
) -> None:
    first = subprocess.Popen(
        [sys.executable, "-u", "resume_app.py"],
        cwd=workdir,
        env=_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert first.stdout is not None
    try:
        assert first.stdout.readline() == "email to ann: welcome!\n"
        assert first.stdout.readline().startswith("sleeping 10 s")
    finally:
        first.send_signal(signal.SIGKILL)  # mid-sleep, as the page says to
        first.wait(timeout=30)
        first.stdout.close()
    assert first.returncode == -signal.SIGKILL
    second = _run(workdir, "resume_app.py")
    # The welcome email's step returned its checkpoint; the body's print ran again.
    assert second.splitlines() == [
        "sleeping 10 s, durably: kill me now (Ctrl-C or kill -9), then run me again",
        "email to ann: how is it going?",
        "done",
    ]
    assert _run(workdir, "resume_app.py") == "done\n"  # finished: the stored result


@pytest.mark.slow
def test_the_tutorial_tests_pass_on_virtual_time(workdir: Path) -> None:
    output = _run(workdir, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_reminders.py")
    assert "2 passed" in output


@pytest.mark.slow
def test_the_testing_how_to_crash_at_every_checkpoint_example_passes(workdir: Path) -> None:
    (workdir / "test_every.py").write_text(_files(TESTING_HOW_TO)["test_every.py"])
    output = _run(workdir, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_every.py")
    assert "1 passed" in output


def test_the_fix_loop_finds_why_fixes_and_retries_from_the_failed_step(workdir: Path) -> None:
    assert _run(workdir, "shop.py") == _documented_output("python shop.py")
    url = f"sqlite:///{workdir / 'shop.sqlite'}"
    why = _run(workdir, "-m", "dbos_trio.cli", "workflow", "get", "order-1", "-s", url)
    assert "PaymentDeclined: amount 120 is over the limit 100" in why and "traceback:" in why
    # The fix, made as the page says.
    source = (workdir / "shop.py").read_text()
    assert "LIMIT = 100" in source
    (workdir / "shop.py").write_text(source.replace("LIMIT = 100", "LIMIT = 500"))
    command = "dbos-trio workflow retry order-1 -s sqlite:///shop.sqlite"
    retry = f"{command} --forked-workflow-id order-1-retry"
    retried = _run(workdir, "-m", "dbos_trio.cli", *retry.split()[1:])
    assert retried == _documented_output(retry)
    done = _run(workdir, "shop.py", "order-1-retry")
    assert done == _documented_output("python shop.py order-1-retry")
