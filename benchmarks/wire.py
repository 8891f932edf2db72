"""A counting TCP proxy for the PostgreSQL wire protocol (S7).

The library under test connects to :attr:`WireCounter.port` instead of the server; one thread
relays every byte unchanged and parses a copy of both directions, per connection:

* **statements**: ``Query`` ('Q', simple protocol) and ``Execute`` ('E', extended protocol)
  messages; the SQL text comes from the ``Query`` itself or from the ``Parse`` that created the
  statement the portal was bound to (psycopg prepares hot statements after a few executions,
  after which only ``Bind``/``Execute`` travel);
* **round trips**: client *flights* (bytes from the client after the server last spoke, or
  first on a connection) that contain a message the server must answer (``Query``, ``Sync``,
  ``Flush``, the startup and authentication messages). A pipelined batch is one round trip;
  a ``Terminate`` is none;
* **commits**: transactions that ended committed, found from the ``ReadyForQuery`` status
  byte: ``T`` → ``I`` ends an explicit transaction, ``I`` → ``I`` with statements in between
  is an implicit (autocommit) one; it is a rollback if the server sent an error or a
  ``ROLLBACK`` tag. This is what ``pg_stat_database.xact_commit`` counts, read-only
  transactions (pool pings included) too;
* **write commits**: the commits that contained a statement whose text writes (``INSERT``,
  ``UPDATE``, ``DELETE``, ``MERGE``, DDL, or a call of a function in the ``dbos`` schema; row
  locks such as ``FOR UPDATE`` do not count). A heuristic on SQL text, good enough to tell a
  durable commit from a read-only one on the hot path.

Counting at the wire is library-neutral (both libraries speak libpq's protocol through
psycopg), needs no server restart or extension, and is exact per process even while other
sessions use the same server. SSL and GSS encryption requests are answered "no" by the proxy
itself so that the stream stays readable.
"""

from __future__ import annotations

import contextlib
import re
import selectors
import socket
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

_SSL_REQUEST = 80877103
_GSSENC_REQUEST = 80877104
_CANCEL_REQUEST = 80877102

_LOCKING = re.compile(r"\bFOR\s+(?:NO\s+KEY\s+|KEY\s+)?(?:UPDATE|SHARE)\b", re.IGNORECASE)
_WRITES = re.compile(
    r"\b(?:INSERT|UPDATE|DELETE|MERGE|TRUNCATE|CREATE|ALTER|DROP)\b"
    r"|\bdbos\"?\.\"?\w+\"?\s*\(",
    re.IGNORECASE,
)
_ANSWERED = frozenset(b"QSH")  # client messages after which the client waits for the server


def is_write(sql: str) -> bool:
    return bool(_WRITES.search(_LOCKING.sub(" ", sql)))


def normalize(sql: str, width: int = 110) -> str:
    return " ".join(sql.split())[:width]


@dataclass
class Counts:
    connections: int = 0
    statements: int = 0
    parses: int = 0
    round_trips: int = 0
    commits: int = 0
    write_commits: int = 0
    rollbacks: int = 0
    bytes_to_server: int = 0
    bytes_to_client: int = 0
    sql: Counter[str] = field(default_factory=Counter)

    def copy(self) -> Counts:
        clone = Counts(**{k: v for k, v in vars(self).items() if k != "sql"})
        clone.sql = Counter(self.sql)
        return clone

    def minus(self, earlier: Counts) -> Counts:
        diff = Counts(**{k: v - getattr(earlier, k) for k, v in vars(self).items() if k != "sql"})
        diff.sql = self.sql - earlier.sql
        return diff


class _Link:
    """One client connection and its upstream twin, with the parser state of both directions."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.started = False  # startup message seen (typed messages follow)
        self.passthrough = False  # a cancel request: relay, do not parse
        self.cbuf = bytearray()
        self.sbuf = bytearray()
        self.server_spoke_last = True  # so the first client flight counts
        self.flight_counted = False
        self.prepared: dict[bytes, str] = {}
        self.portals: dict[bytes, bytes] = {}
        # Per sync point, in order: (is_statement, writes) items, closed by a marker.
        self.pending: list[tuple[str, bool]] = []
        self.status = b"I"
        self.txn_writes = False
        self.txn_failed = False


class WireCounter:
    """Listen on 127.0.0.1:<ephemeral>, relay to ``upstream``, count; see the module doc."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self.port: int = self._listener.getsockname()[1]
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._lock = threading.Lock()
        self._counts = Counts()
        self._links: dict[socket.socket, _Link] = {}
        self._thread = threading.Thread(target=self._loop, name="wire-counter", daemon=True)
        self._closing = False
        self.error: BaseException | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> WireCounter:
        self._sel.register(self._listener, selectors.EVENT_READ, "accept")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing = True
        self._wake_w.send(b"x")
        self._thread.join(5)
        for link in list(self._links.values()):
            self._drop(link)
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> WireCounter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def snapshot(self) -> Counts:
        with self._lock:
            return self._counts.copy()

    # ---------------------------------------------------------------- relay loop

    def _loop(self) -> None:
        try:
            while not self._closing:
                for key, _ in self._sel.select():
                    if key.data == "wake":
                        return
                    if key.data == "accept":
                        self._accept()
                        continue
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    link = self._links.get(sock)
                    if link is not None:
                        self._pump(link, from_client=sock is link.client)
        except BaseException as exc:  # surfaced by the driver through .error
            self.error = exc

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        server = socket.create_connection(self._upstream)
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        link = _Link(client, server)
        self._links[client] = link
        self._links[server] = link
        self._sel.register(client, selectors.EVENT_READ)
        self._sel.register(server, selectors.EVENT_READ)
        with self._lock:
            self._counts.connections += 1

    def _drop(self, link: _Link) -> None:
        for sock in (link.client, link.server):
            self._links.pop(sock, None)
            with contextlib.suppress(KeyError, ValueError):
                self._sel.unregister(sock)
            sock.close()

    def _pump(self, link: _Link, *, from_client: bool) -> None:
        src, dst = (link.client, link.server) if from_client else (link.server, link.client)
        try:
            data = src.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self._drop(link)
            return
        with self._lock:
            if from_client:
                forward = self._from_client(link, data)
            else:
                forward = data
                self._from_server(link, data)
        try:
            if forward:
                dst.sendall(forward)
        except OSError:
            self._drop(link)

    # ---------------------------------------------------------------- client -> server

    def _from_client(self, link: _Link, data: bytes) -> bytes:
        """Parse a copy of what the client sent; return the bytes to relay upstream."""
        self._counts.bytes_to_server += len(data)
        if link.passthrough:
            return data
        if link.server_spoke_last:
            link.server_spoke_last = False
            link.flight_counted = False
        link.cbuf += data
        if link.started:
            self._parse_client(link)
            return data
        # Before the startup message: untyped messages, relayed one by one (minus encryption
        # requests, which are answered here).
        forward = bytearray()
        while not link.started:
            if len(link.cbuf) < 8:
                break
            length, code = struct.unpack_from("!ii", link.cbuf)
            if len(link.cbuf) < length:
                break
            message = bytes(link.cbuf[:length])
            del link.cbuf[:length]
            self._count_flight(link)
            if code in (_SSL_REQUEST, _GSSENC_REQUEST):
                link.client.sendall(b"N")
                link.server_spoke_last = True
                link.flight_counted = False
                continue
            forward += message
            if code == _CANCEL_REQUEST:
                link.passthrough = True
                forward += link.cbuf
                link.cbuf.clear()
                return bytes(forward)
            link.started = True
        if link.started:
            forward += link.cbuf  # the rest of this chunk: typed messages, relayed as they are
            self._parse_client(link)
        return bytes(forward)

    def _parse_client(self, link: _Link) -> None:
        while len(link.cbuf) >= 5:
            kind = link.cbuf[0]
            length = struct.unpack_from("!i", link.cbuf, 1)[0]
            if len(link.cbuf) < 1 + length:
                break
            body = bytes(link.cbuf[5 : 1 + length])
            del link.cbuf[: 1 + length]
            self._client_message(link, kind, body)

    def _count_flight(self, link: _Link) -> None:
        if not link.flight_counted:
            link.flight_counted = True
            self._counts.round_trips += 1

    def _client_message(self, link: _Link, kind: int, body: bytes) -> None:
        c = self._counts
        if kind in _ANSWERED or kind == ord("p"):
            self._count_flight(link)
        if kind == ord("Q"):
            sql = body.rstrip(b"\0").decode("utf-8", "replace")
            c.statements += 1
            c.sql[normalize(sql)] += 1
            link.pending.append(("Q", is_write(sql)))
        elif kind == ord("P"):
            name, _, rest = body.partition(b"\0")
            sql = rest.partition(b"\0")[0].decode("utf-8", "replace")
            link.prepared[name] = sql
            c.parses += 1
        elif kind == ord("B"):
            portal, _, rest = body.partition(b"\0")
            link.portals[portal] = rest.partition(b"\0")[0]
        elif kind == ord("E"):
            portal = body.partition(b"\0")[0]
            sql = link.prepared.get(link.portals.get(portal, b""), "")
            c.statements += 1
            c.sql[normalize(sql)] += 1
            link.pending.append(("E", is_write(sql)))
        elif kind == ord("S"):
            link.pending.append(("S", False))

    # ---------------------------------------------------------------- server -> client

    def _from_server(self, link: _Link, data: bytes) -> None:
        self._counts.bytes_to_client += len(data)
        link.server_spoke_last = True
        if link.passthrough or not link.started:
            return
        link.sbuf += data
        while len(link.sbuf) >= 5:
            kind = link.sbuf[0]
            length = struct.unpack_from("!i", link.sbuf, 1)[0]
            if len(link.sbuf) < 1 + length:
                break
            body = bytes(link.sbuf[5 : 1 + length])
            del link.sbuf[: 1 + length]
            if kind == ord("E") or (kind == ord("C") and body.startswith(b"ROLLBACK")):
                link.txn_failed = True
            elif kind == ord("Z"):
                self._ready(link, body[:1])

    def _ready(self, link: _Link, status: bytes) -> None:
        # Everything up to the first sync point (a Sync or a simple Query) belongs to this
        # ReadyForQuery.
        executed = False
        while link.pending:
            tag, writes = link.pending.pop(0)
            if tag in ("E", "Q"):
                executed = True
                link.txn_writes |= writes
            if tag in ("S", "Q"):
                break
        previous, link.status = link.status, status
        if status != b"I":
            return
        if previous in (b"T", b"E") or executed:
            c = self._counts
            if link.txn_failed or previous == b"E":
                c.rollbacks += 1
            else:
                c.commits += 1
                if link.txn_writes:
                    c.write_commits += 1
        link.txn_writes = False
        link.txn_failed = False


def per_unit(diff: Counts, units: int, top: int = 12) -> dict[str, Any]:
    """The S7 figures per workflow from a snapshot difference."""
    n = float(units)
    return {
        "statements_per_wf": round(diff.statements / n, 2),
        "round_trips_per_wf": round(diff.round_trips / n, 2),
        "commits_per_wf": round(diff.commits / n, 2),
        "write_commits_per_wf": round(diff.write_commits / n, 2),
        "rollbacks_per_wf": round(diff.rollbacks / n, 2),
        "parses_per_wf": round(diff.parses / n, 2),
        "bytes_to_server_per_wf": round(diff.bytes_to_server / n, 1),
        "bytes_to_client_per_wf": round(diff.bytes_to_client / n, 1),
        "connections_opened": diff.connections,
        "top_statements_per_wf": [
            [round(count / n, 2), sql] for sql, count in diff.sql.most_common(top)
        ],
    }


def rates(diff: Counts, seconds: float) -> dict[str, float]:
    """Background traffic per second (measured while no workflow runs)."""
    return {
        "idle_statements_per_s": round(diff.statements / seconds, 2),
        "idle_round_trips_per_s": round(diff.round_trips / seconds, 2),
        "idle_commits_per_s": round(diff.commits / seconds, 2),
    }


def net_of_background(metrics: dict[str, Any], timed_s: float, units: int) -> dict[str, float]:
    """Per-workflow figures minus the idle background rate spread over the timed window.

    Background work (queue pollers, pings, schedulers) runs during the timed window too; the
    raw figures include it, these subtract what the idle second before would predict.
    """
    out = {}
    for figure in ("statements", "round_trips", "commits"):
        background = metrics[f"idle_{figure}_per_s"] * timed_s / units
        out[f"{figure}_per_wf_net"] = round(metrics[f"{figure}_per_wf"] - background, 2)
    return out


def transaction_metrics(
    app: Counts,
    sys: Counts,
    sys_idle: Counts,
    idle_s: float,
    timed_s: float,
    k: int,
    n: int,
) -> dict[str, Any]:
    """S8-WIRE: what a workflow of ``k`` datasource transactions cost on each database.

    ``app`` and ``sys`` are the timed-window differences of the application and system
    database proxies; ``sys_idle`` the system proxy's difference over the idle window
    before (its background rate is subtracted from the ``_net`` figures; the application
    database has no background traffic of either library). Commits count read-only
    transactions too (an ownership check is one); write commits only those that wrote.
    """
    units = float(n)
    sys_background = sys_idle.commits / idle_s * timed_s / units
    sys_commits_net = sys.commits / units - sys_background
    return {
        "app_commits_per_tx": round(app.commits / units / k, 3),
        "app_round_trips_per_tx": round(app.round_trips / units / k, 3),
        "app_statements_per_tx": round(app.statements / units / k, 3),
        "app_write_commits_per_tx": round(app.write_commits / units / k, 3),
        "app_commits_per_wf": round(app.commits / units, 2),
        "app_connections_opened": app.connections,
        "sys_commits_per_wf": round(sys.commits / units, 2),
        "sys_commits_per_wf_net": round(sys_commits_net, 2),
        "sys_write_commits_per_wf": round(sys.write_commits / units, 2),
        "sys_round_trips_per_wf": round(sys.round_trips / units, 2),
        "sys_statements_per_wf": round(sys.statements / units, 2),
        "commits_per_wf_net": round(app.commits / units + sys_commits_net, 2),
        "round_trips_per_wf": round((app.round_trips + sys.round_trips) / units, 2),
        "idle_sys_commits_per_s": round(sys_idle.commits / idle_s, 2),
        "top_app_statements_per_wf": [
            [round(count / units, 2), sql] for sql, count in app.sql.most_common(8)
        ],
        "top_sys_statements_per_wf": [
            [round(count / units, 2), sql] for sql, count in sys.sql.most_common(8)
        ],
    }
