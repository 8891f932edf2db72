"""The dashboard's one stylesheet and one script, served from ``/static/`` (the
Content-Security-Policy allows no inline script or style, and no build step makes them).

The script is progressive enhancement only: every page and action works without it. It
refreshes the workflow list's rows in place while "live" is ticked (fetching the same
URL with ``fragment=rows``: server-rendered, escaped rows), and turns ``<time>`` elements
into the browser's local time on hover.
"""

from __future__ import annotations

CSS = """
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: #1b1f24; background: #f6f7f9; }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem;
  background: #1f2a37; color: #fff; }
header nav a { color: #cdd6e0; margin-right: 1rem; text-decoration: none; }
header nav a.active, header nav a:hover { color: #fff; text-decoration: underline; }
.mode { margin-left: auto; background: #b45309; padding: .1rem .5rem; border-radius: 3px; }
main { padding: 1rem 1.2rem; }
h1 { font-size: 1.3rem; margin: .2rem 0 1rem; word-break: break-all; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #e3e6ea;
  vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
a.wfid { font-family: ui-monospace, monospace; word-break: break-all; }
.status { font-size: .8rem; font-weight: 600; padding: .05rem .4rem; border-radius: 3px;
  background: #e5e7eb; }
.status-success { background: #d1fae5; color: #065f46; }
.status-error, .status-max_recovery_attempts_exceeded { background: #fee2e2; color: #991b1b; }
.status-pending { background: #dbeafe; color: #1e40af; }
.status-enqueued, .status-delayed { background: #fef3c7; color: #92400e; }
.status-cancelled { background: #e5e7eb; color: #374151; }
.status-paused { background: #ede9fe; color: #5b21b6; }
pre.payload { margin: 0; white-space: pre-wrap; word-break: break-all; max-height: 16rem;
  overflow: auto; background: #f3f4f6; padding: .3rem .5rem; font-size: .85rem; }
pre.raw { background: #fff7ed; }
.note { color: #92400e; font-size: .8rem; }
.none { color: #9ca3af; }
form.filters { display: flex; flex-wrap: wrap; gap: .6rem; align-items: end;
  margin-bottom: .8rem; }
form.filters label { display: flex; flex-direction: column; font-size: .8rem; }
input, select, button { font: inherit; padding: .2rem .4rem; }
button.danger { background: #b91c1c; color: #fff; border: 0; border-radius: 3px;
  padding: .35rem .8rem; }
.actions a { margin-right: .8rem; }
.paging a { margin-right: 1rem; }
.notice { background: #ecfdf5; border: 1px solid #6ee7b7; padding: .4rem .6rem; }
.error-page { background: #fef2f2; border: 1px solid #fca5a5; padding: .6rem; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem;
  background: #fff; padding: .6rem; margin: 0; }
dl.fields dt { color: #4b5563; }
dl.fields dd { margin: 0; word-break: break-all; }
svg.bar { width: 220px; height: 12px; background: #eef1f4; }
svg.bar rect { fill: #3b82f6; }
svg.bar rect.failed { fill: #dc2626; }
svg.chart { width: 100%; max-width: 980px; height: auto; display: block; background: #fff;
  border: 1px solid #e3e6ea; margin: .3rem 0 .5rem; }
svg.chart text { font: 11px system-ui, sans-serif; fill: #374151; }
svg.chart text.legend { font-size: 12px; }
svg.chart g.bucket:hover rect[fill="transparent"] { fill: #f3f4f6; }
.counts { display: flex; flex-wrap: wrap; gap: .5rem; margin: .4rem 0 1rem; }
.counts a.count { display: flex; flex-direction: column; gap: .1rem; min-width: 9rem;
  padding: .45rem .6rem; background: #fff; border: 1px solid #e3e6ea; border-radius: 4px;
  color: inherit; text-decoration: none; }
.counts .number { font-size: 1.4rem; font-weight: 600; }
.counts .note { color: #6b7280; }
.health { padding: .5rem .8rem; border-radius: 4px; margin-bottom: .8rem; }
.health h2 { margin: 0 0 .3rem; }
.health.ok { background: #ecfdf5; border: 1px solid #6ee7b7; }
.health.warn { background: #fffbeb; border: 1px solid #f59e0b; }
.health ul { margin: 0; padding-left: 1.2rem; }
.health li { margin: .3rem 0; }
.health .fix { color: #4b5563; font-size: .85rem; }
.windows strong, .windows a { margin-right: .8rem; }
details.numbers { margin-bottom: .8rem; }
.age { color: #6b7280; font-size: .85rem; }
td.error-cell { color: #991b1b; max-width: 22rem; word-break: break-word; }
form.inline { display: inline; margin-right: .3rem; }
.invalid { color: #991b1b; }
"""

JS = """
(function () {
  "use strict";
  var live = document.getElementById("live");
  var rows = document.getElementById("workflow-rows");
  if (live && rows) {
    var timer = null;
    var refresh = function () {
      var target = new URL(window.location.href);
      target.searchParams.set("fragment", "rows");
      fetch(target.toString(), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (text) { rows.innerHTML = text; live.dataset.refreshed = Date.now(); })
        .catch(function () {});
    };
    var toggle = function () {
      if (timer) { clearInterval(timer); timer = null; }
      if (live.checked) { timer = setInterval(refresh, 3000); }
    };
    live.addEventListener("change", toggle);
    toggle();
  }
  document.querySelectorAll("time[datetime]").forEach(function (t) {
    t.title = new Date(t.getAttribute("datetime")).toString();
  });
})();
"""
