"""Throwaway PostgreSQL clusters on 127.0.0.1, for tests that stop, restart or fail over a
server (never the shared one on 5432).

A :class:`Cluster` is a data directory made by ``initdb`` in a temporary directory, on a
free port, listening on 127.0.0.1 only, with trust authentication for local TCP and for
replication. It can be stopped (``fast`` or ``immediate``), started again, and cloned
into a streaming standby (``pg_basebackup -R``) that can be promoted. PostgreSQL refuses
to run as root, so when this process is root every server command runs as the
``postgres`` user (``runuser``), and the directories are handed to it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

StopMode = Literal["smart", "fast", "immediate"]
SERVER_USER = "postgres"


def postgres_bin() -> Path:
    """The directory of the newest installed PostgreSQL's server binaries."""
    configured = os.environ.get("DBOS_TRIO_PG_BIN")
    if configured:
        return Path(configured)
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    if not versions:
        raise FileNotFoundError("no PostgreSQL server binaries (initdb) found")
    return versions[-1]


def available() -> str | None:
    """None if throwaway clusters can be made here, else why not."""
    try:
        binaries = postgres_bin()
    except FileNotFoundError as missing:
        return str(missing)
    if not (binaries / "initdb").exists():
        return f"no initdb in {binaries}"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser (PostgreSQL refuses to run as root)"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", SERVER_USER, "--", *command]
    return command


def _hand_over(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, SERVER_USER, SERVER_USER)


class Cluster:
    """One throwaway server: ``with Cluster.create() as cluster: ... cluster.url()``."""

    def __init__(self, data: Path, port: int, *, log: Path) -> None:
        self.data = data
        self.port = port
        self.log = log

    # --- making and removing --------------------------------------------------------

    @classmethod
    @contextlib.contextmanager
    def create(cls, *, settings: dict[str, str] | None = None) -> Iterator[Cluster]:
        """A new cluster, started; stopped (immediately) and deleted after the block."""
        root = Path(tempfile.mkdtemp(prefix="dbos-trio-pg-"))
        _hand_over(root)
        cluster = cls(root / "data", free_port(), log=root / "server.log")
        try:
            cluster._initdb(settings or {})
            cluster.start()
            yield cluster
        finally:
            cluster.discard()
            shutil.rmtree(root, ignore_errors=True)

    @contextlib.contextmanager
    def standby(self) -> Iterator[Cluster]:
        """A streaming standby of this (running) cluster, started; removed after."""
        root = Path(tempfile.mkdtemp(prefix="dbos-trio-pg-standby-"))
        _hand_over(root)
        standby = Cluster(root / "data", free_port(), log=root / "server.log")
        try:
            self._run(
                "pg_basebackup",
                "-D",
                str(standby.data),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-R",  # standby.signal and primary_conninfo
                "-X",
                "stream",
            )
            # Its own port, and no synchronous standby of its own to wait for once promoted
            # (pg_basebackup copied the primary's settings).
            standby._configure({"port": str(standby.port), "synchronous_standby_names": "''"})
            standby.start()
            yield standby
        finally:
            standby.discard()
            shutil.rmtree(root, ignore_errors=True)

    def _initdb(self, settings: dict[str, str]) -> None:
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-instructions",
            "-E",
            "UTF8",
        )
        self._configure(
            {
                "listen_addresses": "'127.0.0.1'",
                "port": str(self.port),
                "unix_socket_directories": f"'{self.data}'",
                "max_connections": "200",
                "wal_level": "replica",
                "max_wal_senders": "5",
                "hot_standby": "on",
                **settings,
            }
        )

    def _configure(self, settings: dict[str, str]) -> None:
        conf = self.data / "postgresql.auto.conf"
        lines = [f"{key} = {value}\n" for key, value in settings.items()]
        existing = conf.read_text() if conf.exists() else ""
        conf.write_text(existing + "".join(lines))

    def discard(self) -> None:
        """Stop the server if it runs (immediately: its data is thrown away)."""
        if self.running():
            self.stop("immediate")

    # --- running -------------------------------------------------------------------

    def _run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        command = _as_server_user([str(postgres_bin() / program), *args])
        return subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self, mode: StopMode = "fast") -> None:
        """Stop the server (``fast``: sessions are told and rolled back; ``immediate``: a
        crash, recovered from WAL at the next start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self, mode: StopMode = "fast", *, down_for: float = 0.0) -> None:
        """Stop, stay down ``down_for`` seconds of real time, start again."""
        self.stop(mode)
        time.sleep(down_for)
        self.start()

    def promote(self) -> None:
        """Promote a standby to a primary (waits until it accepts writes)."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-t", "60", "promote")

    def running(self) -> bool:
        if not self.data.exists():
            return False
        done = subprocess.run(
            _as_server_user([str(postgres_bin() / "pg_ctl"), "-D", str(self.data), "status"]),
            capture_output=True,
            text=True,
        )
        return done.returncode == 0

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"


def pgbouncer_available() -> str | None:
    """None if a PgBouncer can be started here, else why not."""
    if shutil.which("pgbouncer") is None:
        return "pgbouncer is not installed (apt-get install pgbouncer)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser (PgBouncer refuses to run as root)"
    return None


@contextlib.contextmanager
def pgbouncer(cluster: Cluster, *, pool_mode: str = "transaction") -> Iterator[str]:
    """A PgBouncer in front of ``cluster`` (trust auth, ``pool_mode``); yields the URL of
    its ``postgres`` database. Stopped after the block."""
    root = Path(tempfile.mkdtemp(prefix="dbos-trio-pgbouncer-"))
    _hand_over(root)
    port = free_port()
    (root / "users.txt").write_text('"postgres" ""\n')
    (root / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host=127.0.0.1 port={cluster.port}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {root / 'users.txt'}\n"
        f"pool_mode = {pool_mode}\n"
        "max_client_conn = 500\n"
        "default_pool_size = 20\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
        f"logfile = {root / 'pgbouncer.log'}\n"
        f"pidfile = {root / 'pgbouncer.pid'}\n"
    )
    for path in root.iterdir():
        _hand_over(path)
    process = subprocess.Popen(
        _as_server_user(["pgbouncer", str(root / "pgbouncer.ini")]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"pgbouncer did not start: {process.stderr and process.stderr.read()!r}"
                )
            time.sleep(0.05)
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(root, ignore_errors=True)
