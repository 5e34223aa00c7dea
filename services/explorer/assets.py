"""The explorer's stylesheet and script, served as they are: no build step, nothing fetched.

The script does three small things: live regions (`data-live`) are refreshed in place when the
store's version rises (server-sent events from /api/events; the page is fetched again and each
region whose HTML changed is swapped, so nothing around it moves), countdowns (`data-deadline`)
tick every second, and `/` focuses the search box.
"""

from __future__ import annotations

STYLESHEET = """
:root { --fg:#1b1f24; --muted:#59636e; --line:#d1d9e0; --bg:#fff; --panel:#f6f8fa; --accent:#0550ae;
  --ok:#1a7f37; --bad:#cf222e; --warn:#9a6700; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
a { color:var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible
  { outline:3px solid #fb8f44; outline-offset:2px; }
.skip { position:absolute; left:-999px; } .skip:focus { left:8px; top:8px; background:#fff; padding:4px 8px; z-index:2; }
header { display:flex; flex-wrap:wrap; align-items:center; gap:4px 16px; padding:8px 16px; border-bottom:1px solid var(--line); background:var(--panel); min-height:48px; }
header .brand { font-weight:600; margin-right:8px; }
nav ul { display:flex; flex-wrap:wrap; gap:4px 12px; list-style:none; margin:0; padding:0; }
nav a[aria-current="page"] { font-weight:600; color:var(--fg); text-decoration:none; border-bottom:2px solid #fb8f44; }
#live-status { margin-left:auto; color:var(--muted); font-variant-numeric:tabular-nums; min-width:16em; text-align:right; white-space:nowrap; height:1.45em; overflow:hidden; }
main { padding:12px 16px 48px; max-width:1400px; }
h1 { font-size:20px; margin:8px 0 4px; word-break:break-all; } h2 { font-size:16px; margin:20px 0 6px; }
.muted { color:var(--muted); }
.scroll { overflow-x:auto; max-width:100%; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:var(--panel); position:sticky; top:0; font-weight:600; white-space:nowrap; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
.badge { display:inline-block; padding:0 6px; margin:0 2px 2px 0; border-radius:10px; font-size:12px; border:1px solid var(--line); white-space:nowrap; }
.badge.ok { color:var(--ok); border-color:var(--ok); } .badge.bad { color:var(--bad); border-color:var(--bad); }
.badge.warn { color:var(--warn); border-color:var(--warn); }
.verdict-selected { color:var(--ok); font-weight:600; } .verdict-filtered { color:var(--muted); } .verdict-outranked { color:var(--warn); }
.bar { display:block; width:220px; height:12px; background:var(--panel); border:1px solid var(--line); }
.bar .neg { opacity:.45; } .bar line.zero { stroke:var(--fg); stroke-width:1px; vector-effect:non-scaling-stroke; }
#tolerations td, #decision td { overflow-wrap:anywhere; }
.p0{background:#0969da;fill:#0969da}.p1{background:#8250df;fill:#8250df}.p2{background:#1a7f37;fill:#1a7f37}
.p3{background:#bf8700;fill:#bf8700}.p4{background:#cf222e;fill:#cf222e}.p5{background:#1b7c83;fill:#1b7c83}
.p6{background:#6e7781;fill:#6e7781}.p7{background:#e16f24;fill:#e16f24}
.legend span.swatch { display:inline-block; width:10px; height:10px; margin:0 4px 0 10px; vertical-align:baseline; }
.added { color:var(--ok); } .removed { color:var(--bad); }
tr.current { background:#fff8c5; }
tr[data-trigger="toleration-expired"] td:nth-child(3), tr[data-trigger="score-expired"] td:nth-child(3) { font-weight:600; }
.countdown { font-variant-numeric:tabular-nums; display:inline-block; min-width:9em; }
form.filters { display:flex; flex-wrap:wrap; gap:8px; align-items:end; margin:8px 0; }
form.filters label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); }
input, select, textarea, button { font:inherit; padding:3px 6px; }
textarea { width:100%; min-height:320px; font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:13px; }
.grid2 { display:grid; grid-template-columns:minmax(0,1fr) minmax(0,1fr); gap:16px; }
.what-if { display:grid; grid-template-columns:minmax(0,2fr) minmax(0,3fr); gap:16px; }
table.verdicts th.why { white-space:normal; } table.verdicts td.why { overflow-wrap:anywhere; }
span.error.code { display:block; white-space:pre; }
.code, pre.code { font:13px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; white-space:pre; overflow-x:auto; background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:8px; margin:6px 0; }
details#spec { margin:4px 0 8px; } details#spec summary { cursor:pointer; color:var(--accent); }
.cell-on { text-align:center; color:var(--ok); } td.cell, th.cell { text-align:center; padding:2px; min-width:22px; }
.pager { margin:8px 0; display:flex; gap:12px; }
.note { background:var(--panel); border:1px solid var(--line); padding:8px 12px; border-radius:6px; }
.error { color:var(--bad); white-space:pre-wrap; }
.st { white-space:nowrap; font-weight:600; padding:0 6px; border-radius:10px; }
.st-ToApply { color:#424a53; background:#eaeef2; } .st-Progressing { color:#0550ae; background:#ddf4ff; }
.st-Succeeded { color:#116329; background:#dafbe1; } .st-Failed { color:#a40e26; background:#ffebe9; }
.st-TimeOut { color:#7d4e00; background:#fff1c2; } .st-Skip { color:#59636e; background:#f6f8fa; }
.progress { display:block; width:220px; max-width:100%; height:10px; background:var(--panel); border:1px solid var(--line); margin:2px 0; }
.progress .st-ToApply { fill:#afb8c1; } .progress .st-Progressing { fill:#0969da; }
.progress .st-Succeeded { fill:#1a7f37; } .progress .st-Failed { fill:#cf222e; }
.progress .st-TimeOut { fill:#bf8700; } .progress .st-Skip { fill:#d0d7de; }
.group { display:flex; gap:4px 12px; align-items:baseline; border-bottom:1px solid var(--line); padding:4px 0; }
.group-name { min-width:10em; font-weight:600; }
ul.chips { display:flex; flex-wrap:wrap; gap:4px; list-style:none; padding:0; margin:0; }
.chip { padding:0 8px; border-radius:10px; border:1px solid var(--line); font-size:12px; white-space:nowrap; }
ul.next { margin:4px 0; padding-left:20px; }
h3 { font-size:14px; margin:12px 0 4px; }
table.queues td[class^="depth-"] { white-space:nowrap; }
.depth-1 { padding-left:24px; } .depth-2 { padding-left:40px; } .depth-3 { padding-left:56px; }
.depth-4 { padding-left:72px; } .depth-5 { padding-left:88px; } .depth-6 { padding-left:104px; }
.depth-7 { padding-left:120px; } .depth-8 { padding-left:136px; }
table.placements td, table.changes td { overflow-wrap:break-word; }
details.why summary { cursor:pointer; color:var(--accent); } details.why ul { margin:2px 0; padding-left:18px; }
ul.problems { margin:4px 0; padding-left:20px; color:var(--bad); } ul.problems code { font-size:13px; }
@media (max-width: 760px) {
  .grid2, .what-if { grid-template-columns:1fr; }
  .wide-only { display:none; }
  .bar { width:120px; }
  .group { flex-direction:column; }
  #live-status { margin-left:0; text-align:left; }
}
"""

SCRIPT = """
(function () {
  "use strict";
  var status = document.getElementById("live-status");
  var version = Number(document.body.dataset.version || 0);
  var refreshing = false, pending = false;

  function stamp(text) { if (status) { status.textContent = text; } }

  function refresh() {
    if (refreshing) { pending = true; return; }
    refreshing = true;
    fetch(location.href, { headers: { "X-Fleetplace-Live": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        document.querySelectorAll("[data-live][id]").forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          if (fresh && fresh.innerHTML !== el.innerHTML && !el.contains(document.activeElement)) {
            el.innerHTML = fresh.innerHTML;
          }
        });
        tick();
      })
      .catch(function () { stamp("live: refresh failed"); })
      .finally(function () { refreshing = false; if (pending) { pending = false; refresh(); } });
  }

  if (window.EventSource && document.body.dataset.live === "1") {
    var source = new EventSource("/api/events");
    source.onmessage = function (event) {
      var data = JSON.parse(event.data);
      var now = new Date().toISOString().replace(/\\.\\d+Z$/, "Z");  // the pages' one time format
      stamp("live \\u00b7 version " + data.version + " \\u00b7 " + now);
      if (data.version > version) { version = data.version; refresh(); }
    };
    source.onerror = function () { stamp("live: reconnecting\\u2026"); };
  }

  function span(ms) {
    var s = Math.round(Math.abs(ms) / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s = s % 60;
    var text = (h ? h + "h " : "") + (h || m ? m + "m " : "") + (s < 10 && (h || m) ? "0" : "") + s + "s";
    return ms >= 0 ? "in " + text : "ran out " + text + " ago";
  }
  function tick() {
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      el.textContent = span(Date.parse(el.dataset.deadline) - Date.now());
    });
  }
  tick();
  setInterval(tick, 1000);

  document.addEventListener("keydown", function (event) {
    var search = document.querySelector("input[type=search]");
    var typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    if (event.key === "/" && search && !typing) { event.preventDefault(); search.focus(); }
  });
})();
"""
