"""The dashboard as an ASGI application (HTTP only; lifespan accepted and ignored).

Routing is by exact path; a workflow id travels in the query (``/workflow?id=...``),
never in the path, so ids holding ``/`` or ``?`` need no special handling. Every request
passes the :class:`~.security.Guard` first (host, token), every POST also CSRF and the
read-only check, each before anything is read or written. A failure of the system
database while serving a page is a 503 page naming the error class; any other error is
a 500 page; neither shows a traceback, and neither stops the server. A request the
database does not answer within :data:`REQUEST_DEADLINE_SECONDS` is a 503 too. An action
cut off by that deadline may still have been applied: the page says to look again.

Cancellation: a request task cancelled mid-way (the client went away, the server shuts
down) simply ends; a management action already sent to the database is the engine's
own call, whose effect is the same as the Client's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import trio

from dbos_trio._core.filters import epoch_ms
from dbos_trio._core.statuses import ALL_STATUSES
from dbos_trio._ops.activity import MAX_WINDOW_MINUTES
from dbos_trio._sysdb.errors import SystemDatabaseError, SystemDatabaseUnreachable
from dbos_trio.dashboard import _ops_pages as ops_pages
from dbos_trio.dashboard import _overview_pages as overview_pages
from dbos_trio.dashboard import _workflow_pages as workflow_pages
from dbos_trio.dashboard._http import (
    BodyTooLarge,
    Receive,
    Request,
    Response,
    Scope,
    Send,
    read_request,
    redirect,
    send_response,
)
from dbos_trio.dashboard._markup import Html, html
from dbos_trio.dashboard._render import notice, page, url
from dbos_trio.dashboard._security import CSRF_COOKIE, TOKEN_COOKIE, Guard
from dbos_trio.dashboard._source import Source
from dbos_trio.dashboard._static import CSS, JS
from dbos_trio.errors import DBOSException

logger = logging.getLogger("dbos_trio.dashboard")
ACTIONS = ("cancel", "pause", "unpause", "resume", "retry", "fork", "delete")
# What an action did, by the code its redirect carries: the page shows only these texts,
# so a crafted link cannot make the dashboard say anything else.
OUTCOMES = {
    "cancelled": "Cancelled.",
    "already-finished": "Nothing to cancel: it had finished already.",
    "resumed": "Resumed: enqueued again.",
    "not-resumed": "Not resumed: it had succeeded or failed (a failed one: retry it).",
    "retried": "Retried: this new workflow runs the failed one again from its failed step.",
    "forked": "Forked: this is the new workflow.",
    "deleted": "Deleted.",
    "triggered": "Triggered: this run of the schedule was enqueued now.",
    "paused": "Paused: it stops before its next step (the step running now records first) "
    "and nothing runs it until it is unpaused, restarts included.",
    "already-paused": "Nothing changed: it was paused already.",
    "unpaused": "Unpaused: enqueued again, it runs on from its first step not recorded.",
    "not-paused": "Nothing changed: it was not paused.",
}
QUEUE_ACTIONS = ("pause", "unpause")
QUEUE_OUTCOMES = {
    "paused": "Paused: no executor claims from it until it is unpaused; running work goes on.",
    "already-paused": "Nothing changed: it was paused already.",
    "unpaused": "Unpaused: executors claim from it again, with the limits it had.",
    "not-paused": "Nothing changed: it was not paused.",
}
SCHEDULE_ACTIONS = ("pause", "resume", "trigger")
SCHEDULE_OUTCOMES = {
    "paused": "Paused: it fires no more until resumed (every executor stops within its "
    "scheduler's polling interval).",
    "resumed": "Resumed: it fires again from its next tick.",
}
REQUEST_DEADLINE_SECONDS = 15.0
"""A page the system database does not answer within this long is a 503, not a hang (an
executor's own connection retries an outage for as long as it lasts)."""
MetricsText = Callable[[], str]


class BadRequest(Exception):
    """A request whose parameters make no sense: a 400 page saying which."""


class DashboardApp:
    """The ASGI callable. ``metrics``, if given, serves ``/metrics`` with its text (the
    Prometheus exposition format, from whatever the application collects)."""

    def __init__(self, source: Source, guard: Guard, *, metrics: MetricsText | None = None) -> None:
        self.source = source
        self.guard = guard
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        try:
            request = await read_request(scope, receive)
        except BodyTooLarge:
            await send_response(send, Response(413, "request body too large", "text/plain"))
            return
        await send_response(send, await self.respond(request))

    # --- dispatch --------------------------------------------------------------------

    async def respond(self, request: Request) -> Response:
        """The response to one request (never raises, except cancellation)."""
        if not self.guard.host_ok(request.headers):
            return Response(
                421, "this dashboard answers only to a loopback host name", "text/plain"
            )
        if (
            self.guard.token is not None
            and "token" in request.query
            and request.method == "GET"
            and self.guard.token_ok({}, {TOKEN_COOKIE: request.query["token"]})
        ):
            # A browser's first visit: move the token from the URL into a cookie. Only with
            # the right token (anyone else gets the 401 below), and only to a path of this
            # dashboard: "//evil.example/" would be another site, and a non-Latin-1 path
            # cannot stand in a header unquoted.
            kept = {k: v for k, v in request.query.items() if k != "token"}
            response = redirect(url(local_path(request.path), **kept))
            response.set_cookie(TOKEN_COOKIE, request.query["token"])
            return response
        if not self.guard.token_ok(request.headers, request.cookies):
            return Response(401, "a token is required: open /?token=<token>", "text/plain")
        fresh = None if CSRF_COOKIE in request.cookies else self.guard.new_csrf_cookie()
        try:
            with trio.fail_after(REQUEST_DEADLINE_SECONDS):
                response = await self._route(
                    request, request.cookies.get(CSRF_COOKIE) or fresh or ""
                )
        except trio.TooSlowError:
            response = self._error(
                503, "System database unavailable", "no answer in time: is the database up?"
            )
        except BadRequest as error:
            response = self._error(400, "Bad request", str(error))
        except (SystemDatabaseError, SystemDatabaseUnreachable) as error:
            response = self._error(503, "System database unavailable", type(error).__name__)
        except DBOSException as error:
            response = self._error(409, "Refused", f"{type(error).__name__}: {error}")
        except Exception as error:
            logger.exception("dashboard: %s %s failed", request.method, request.path)
            response = self._error(500, "Internal error", type(error).__name__)
        if fresh is not None:
            response.set_cookie(CSRF_COOKIE, fresh)
        return response

    def _error(self, status: int, title: str, detail: str) -> Response:
        body = html('<div class="error-page"><p>{0}</p></div>', detail)
        return Response(status, page(title, body, read_only=self.guard.read_only))

    def _page(self, title: str, content: Html, active: str = "") -> Response:
        return Response(200, page(title, content, active=active, read_only=self.guard.read_only))

    async def _route(self, request: Request, csrf_cookie: str) -> Response:
        """``csrf_cookie``: the browser's, or the one this response sets."""
        path, method = request.path, request.method
        if method == "POST":
            if path == "/schedule":
                return await self._schedule_action(request)
            if path == "/queue":
                return await self._queue_action(request)
            if path != "/action":
                return Response(405, "method not allowed", "text/plain")
            return await self._action(request)
        if method not in ("GET", "HEAD"):
            return Response(405, "method not allowed", "text/plain")
        if path == "/":
            return redirect("/overview")
        if path == "/overview":
            return await self._overview(request)
        if path == "/workflows":
            return await self._workflows(request)
        if path == "/workflow":
            return await self._workflow(request)
        if path == "/confirm":
            return await self._confirm(request, csrf_cookie)
        if path == "/queues":
            queues, depths, oldest = await self.source.queues()
            csrf = None if self.guard.read_only else self.guard.csrf_field(csrf_cookie)
            content = ops_pages.queues_content(
                queues, depths, oldest, self.source.now_ms(), csrf=csrf
            )
            done = notice(QUEUE_OUTCOMES.get(request.query.get("done", "")))
            return self._page("Queues", html("{0}{1}", done, content), "/queues")
        if path == "/schedules":
            listed = await self.source.schedules()
            csrf = None if self.guard.read_only else self.guard.csrf_field(csrf_cookie)
            done = notice(SCHEDULE_OUTCOMES.get(request.query.get("done", "")))
            content = overview_pages.schedules_content(listed, self.source.now_ms(), csrf, done)
            return self._page("Schedules", content, "/schedules")
        if path == "/executors":
            executors, versions = await self.source.executors()
            content = ops_pages.executors_content(
                executors, versions, self.source.now_ms(), self.source.live_window_ms()
            )
            return self._page("Executors & versions", content, "/executors")
        if path == "/static/app.css":
            return Response(200, CSS, "text/css; charset=utf-8")
        if path == "/static/app.js":
            return Response(200, JS, "text/javascript; charset=utf-8")
        if path == "/healthz":
            return Response(200, "ok", "text/plain")
        if path == "/metrics" and self.metrics is not None:
            return Response(200, self.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        return self._error(404, "Not found", f"no page at {path}")

    # --- pages -----------------------------------------------------------------------

    async def _workflows(self, request: Request) -> Response:
        query = request.query
        offset = _offset(query.get("offset"))
        filters: dict[str, Any] = {
            "limit": workflow_pages.PAGE_SIZE,
            "offset": offset,
            "sort_desc": True,
            "load_input": False,
            "load_output": False,
        }
        status = query.get("status", "").strip().upper()
        if status:
            if status not in ALL_STATUSES:
                raise BadRequest(f"status {status!r} is not a workflow status")
            filters["status"] = status
        for field, key in (
            ("name", "name"),
            ("queue", "queue_name"),
            ("prefix", "workflow_id_prefix"),
        ):
            if query.get(field):
                filters[key] = query[field]
        for field, key in (("after", "start_time"), ("before", "end_time")):
            if query.get(field):
                filters[key] = _time(query[field], field)
        rows = await self.source.list_workflows(filters)
        errors = await self.source.failures(rows)
        now = self.source.now_ms()
        if query.get("fragment") == "rows":
            return Response(200, workflow_pages.workflow_rows(rows, errors, now))
        content = workflow_pages.list_content(query, rows, offset, errors, now)
        done = OUTCOMES.get(query.get("done", ""))
        return self._page("Workflows", html("{0}{1}", notice(done), content), "/workflows")

    async def _overview(self, request: Request) -> Response:
        text = request.query.get("minutes", "60")
        minutes = _whole(text)
        if minutes is None or not 1 <= minutes <= MAX_WINDOW_MINUTES:
            raise BadRequest(
                f"minutes {text!r} must be a whole number from 1 to {MAX_WINDOW_MINUTES}"
            )
        view = await self.source.overview(minutes)
        findings = await self.source.health()
        content = overview_pages.overview_content(view, findings, minutes)
        return self._page("Overview", content, "/overview")

    async def _workflow(self, request: Request) -> Response:
        workflow_id = request.query.get("id", "")
        if not workflow_id:
            raise BadRequest("no workflow id (id=...)")
        view = await self.source.workflow_page(workflow_id)
        if view is None:
            return self._error(404, "Not found", f"no workflow {workflow_id}")
        content = workflow_pages.workflow_content(
            view, self.guard.read_only, OUTCOMES.get(request.query.get("done", ""))
        )
        return self._page(f"Workflow {workflow_id}", content)

    async def _confirm(self, request: Request, cookie: str) -> Response:
        if self.guard.read_only:
            return self._error(403, "Read-only", "this dashboard was started read-only")
        workflow_id, action = request.query.get("id", ""), request.query.get("action", "")
        if action not in ACTIONS:
            raise BadRequest(f"unknown action {action!r} (one of {', '.join(ACTIONS)})")
        row = await self.source.get_workflow(workflow_id)
        if row is None:
            return self._error(404, "Not found", f"no workflow {workflow_id}")
        steps = []
        if action == "fork":
            steps = await self.source.step_ids(workflow_id)
            steps.append(max(steps, default=0) + 1)  # after the last: replay them all
        return self._page(
            f"{action.capitalize()} workflow",
            workflow_pages.confirm_content(row, action, self.guard.csrf_field(cookie), steps),
        )

    async def _action(self, request: Request) -> Response:
        if self.guard.read_only:
            return self._error(403, "Read-only", "this dashboard was started read-only")
        if not self.guard.csrf_ok(request.headers, request.cookies, request.form):
            return self._error(403, "Forbidden", "the form's CSRF check failed: reload the page")
        form = request.form
        workflow_id, action = form.get("id", ""), form.get("action", "")
        if action not in ACTIONS:
            raise BadRequest(f"unknown action {action!r}")
        if await self.source.get_workflow(workflow_id) is None:
            return self._error(404, "Not found", f"no workflow {workflow_id}")
        if action == "cancel":
            done = "cancelled" if await self.source.cancel(workflow_id) else "already-finished"
            return redirect(url("/workflow", id=workflow_id, done=done))
        if action == "resume":
            resumed = await self.source.resume(workflow_id)
            done = "resumed" if resumed else "not-resumed"
            return redirect(url("/workflow", id=workflow_id, done=done))
        if action in ("pause", "unpause"):
            try:
                if action == "pause":
                    done = "paused" if await self.source.pause(workflow_id) else "already-paused"
                else:
                    done = "unpaused" if await self.source.unpause(workflow_id) else "not-paused"
            except DBOSException as refused:  # it finished meanwhile: say so, change nothing
                return self._error(409, f"Not {action}d", str(refused))
            return redirect(url("/workflow", id=workflow_id, done=done))
        if action == "retry":
            retried = await self.source.retry(workflow_id)
            return redirect(url("/workflow", id=retried, done="retried"))
        if action == "fork":
            forked = await self.source.fork(workflow_id, _step(form.get("step", "1")))
            return redirect(url("/workflow", id=forked, done="forked"))
        await self.source.delete(workflow_id, delete_children=form.get("delete_children") == "1")
        return redirect(url("/workflows", done="deleted"))

    async def _schedule_action(self, request: Request) -> Response:
        if self.guard.read_only:
            return self._error(403, "Read-only", "this dashboard was started read-only")
        if not self.guard.csrf_ok(request.headers, request.cookies, request.form):
            return self._error(403, "Forbidden", "the form's CSRF check failed: reload the page")
        name, action = request.form.get("name", ""), request.form.get("action", "")
        if action not in SCHEDULE_ACTIONS:
            raise BadRequest(
                f"unknown schedule action {action!r} (one of {', '.join(SCHEDULE_ACTIONS)})"
            )
        if not name or await self.source.get_schedule(name) is None:
            return self._error(404, "Not found", f"no schedule {name!r}")
        if action == "pause":
            await self.source.pause_schedule(name)
            return redirect(url("/schedules", done="paused"))
        if action == "resume":
            await self.source.resume_schedule(name)
            return redirect(url("/schedules", done="resumed"))
        triggered = await self.source.trigger_schedule(name)
        return redirect(url("/workflow", id=triggered, done="triggered"))

    async def _queue_action(self, request: Request) -> Response:
        if self.guard.read_only:
            return self._error(403, "Read-only", "this dashboard was started read-only")
        if not self.guard.csrf_ok(request.headers, request.cookies, request.form):
            return self._error(403, "Forbidden", "the form's CSRF check failed: reload the page")
        name, action = request.form.get("name", ""), request.form.get("action", "")
        if action not in QUEUE_ACTIONS:
            raise BadRequest(f"unknown queue action {action!r} (one of {', '.join(QUEUE_ACTIONS)})")
        try:
            if action == "pause":
                done = "paused" if await self.source.pause_queue(name) else "already-paused"
            else:
                done = "unpaused" if await self.source.unpause_queue(name) else "not-paused"
        except DBOSException as refused:  # no such row, or the internal queue
            return self._error(404, "Not found", str(refused))
        return redirect(url("/queues", done=done))


def local_path(path: str) -> str:
    """``path`` as a path of this site, percent-encoded: never scheme- or host-relative."""
    return quote("/" + path.lstrip("/\\"), safe="/")


def _whole(text: str) -> int | None:
    # ASCII digits only: str.isdigit() accepts "²", which int() refuses.
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def _offset(text: str | None) -> int:
    if not text:
        return 0
    offset = _whole(text)
    if offset is None:
        raise BadRequest(f"offset {text!r} is not a whole number")
    return offset


def _step(text: str) -> int:
    step = _whole(text)
    if step is None or step < 1:
        raise BadRequest(f"step {text!r} must be a whole number, 1 or more")
    return step


def _time(text: str, field: str) -> int:
    value = text if any(c in text[10:] for c in "Z+") else text + "Z"
    try:
        return epoch_ms(value, field)
    except ValueError:
        raise BadRequest(
            f"{field} {text!r} is not an ISO 8601 time such as 2026-01-31T08:00"
        ) from None
