"""The explorer's aiohttp app: pages, a JSON API, server-sent events, and the token check.

Read-only: no route changes anything on the bus (What-if evaluates a submitted spec against the
fleet in memory; the Queues page's what-if places the recorded applications again in memory). As for the workers' debug routes (services/http.py), the explorer shows the
fleet, so off loopback it needs a token: `Authorization: Bearer <token>`, or `?token=` once in a
browser, which sets a same-site cookie.
"""

from __future__ import annotations

import asyncio
import hmac
import math
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web
from yarl import URL

from fleetplace.services.auditor.history import DecisionRecord
from fleetplace.services.auditor.queue_whatif import QueueWhatIf, what_if_queues
from fleetplace.services.explorer import pages, queue_pages, rollout_pages
from fleetplace.services.explorer.assets import SCRIPT, STYLESHEET
from fleetplace.services.explorer.hub_agreement import HubAgreement, HubAnswer
from fleetplace.services.explorer.queue_book import PartitionTree, placement_json
from fleetplace.services.explorer.store import ExplorerStore
from fleetplace.services.explorer.views import (
    PlacementFilter,
    PlacementRow,
    cluster_verdicts,
    placement_row,
    requeue_reason,
    toleration_expiries,
)
from fleetplace.services.rollout.overview import RolloutRow, rollout_row
from fleetplace.shared.api.objects import ObjectError, documents_of, parse_object
from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.placement import schedule
from fleetplace.shared.placement.explain import result_json
from fleetplace.shared.queueing import ConfigError, parse_config
from fleetplace.shared.yaml_text import yaml_document

Clock = Callable[[], datetime]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
STORE: web.AppKey[ExplorerStore] = web.AppKey("store", ExplorerStore)
COOKIE = "fleetplace_explorer"
PAGE_SIZE = 200
MATRIX_ROWS, MATRIX_COLS = 100, 40
QUEUE_PLACEMENTS_SHOWN = 200
HEARTBEAT_S = 15.0


def wall_clock() -> datetime:
    return datetime.now(UTC)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; the scheme is case-insensitive
    (RFC 9110, section 11.1), and a header without one is no token."""
    scheme, _, credentials = (authorization or "").strip().partition(" ")
    credentials = credentials.strip()
    if scheme.lower() != "bearer" or not credentials:
        return None
    return credentials


def same_server(url: URL) -> str:
    """`url` as a location on this server: its path with the leading slashes made one. A location
    starting `//` names another server (and browsers read a backslash there as a slash)."""
    path = "/" + url.raw_path.lstrip("/\\")
    return f"{path}?{url.raw_query_string}" if url.raw_query_string else path


# Names every explorer answers to; the bound host and the names it is given are added.
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# Self only: the pages load their script and stylesheet from /static and nothing else.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def host_name(authority: str) -> str:
    """The name of a Host header or an origin's authority, lower case, without port or brackets."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        return authority[1 : authority.find("]")] if "]" in authority else authority
    return authority.rpartition(":")[0] if ":" in authority else authority


def _port_of(authority: str, default: int) -> int:
    rest = authority.rpartition("]")[2] if authority.startswith("[") else authority
    _, colon, port = rest.rpartition(":")
    return int(port) if colon and port.isdigit() else default


def same_origin(origin: str, host: str) -> bool:
    """Whether an `Origin` header names the server the `Host` header names (scheme aside: a proxy
    in front may speak HTTPS)."""
    try:
        url = URL(origin)
    except ValueError:
        return False
    if url.scheme not in ("http", "https") or url.raw_host is None or url.port is None:
        return False
    default = 443 if url.scheme == "https" else 80
    return host_name(origin.partition("//")[2]) == host_name(host) and url.port == _port_of(host, default)


def _same_origin_request(request: web.Request, host: str) -> bool:
    """Whether a write comes from the explorer's own pages (or from a client that is no browser:
    no `Origin`, no `Sec-Fetch-Site`). Under `Referrer-Policy: no-referrer` a browser's form
    sends `Origin: null`; then its `Sec-Fetch-Site` must say same-origin."""
    origin = request.headers.get("Origin")
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    if origin == "null":
        return fetch_site == "same-origin"
    return origin is None or same_origin(origin, host)


def _host_middleware(hosts: frozenset[str]) -> Any:
    """Answer only requests to the names this explorer serves (a page on another name reaching
    it through DNS rebinding is refused), and refuse cross-origin writes."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        if host_name(host) not in hosts:
            raise web.HTTPForbidden(
                text=f"host {host!r} is not a name this explorer serves: start it with "
                "--allow-host NAME (or FLEETPLACE_EXPLORER_HOSTS) to add one"
            )
        if request.method not in SAFE_METHODS and not _same_origin_request(request, host):
            raise web.HTTPForbidden(text="cross-origin request refused")
        return await handler(request)

    return check


async def _security_headers(_request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


def _token_middleware(token: str) -> Any:
    expected = token.encode()

    def valid(given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), expected)

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if valid(bearer_token(request.headers.get("Authorization"))) or valid(request.cookies.get(COOKIE)):
            return await handler(request)
        if valid(request.query.get("token")):
            query = {k: v for k, v in request.query.items() if k != "token"}
            response = web.HTTPFound(same_server(request.rel_url.with_query(query)))
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
            raise response
        return web.json_response(
            {"error": "unauthorized: give the explorer's token"},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="fleetplace"'},
        )

    return check


def create_app(
    store: ExplorerStore,
    *,
    token: str | None = None,
    clock: Clock = wall_clock,
    addon_resync_s: float = 300.0,
    hosts: Iterable[str] = (),
    hub: HubAgreement | None = None,
) -> web.Application:
    """The explorer over `store`, answering requests to the loopback names and `hosts`; with
    `token`, every route needs it; with `hub`, placement pages show shadow mode's agreement."""
    names = LOOPBACK_HOSTS | {h.strip().lower().strip("[]") for h in hosts}
    middlewares = [_host_middleware(names), *([_token_middleware(token)] if token else [])]
    app = web.Application(middlewares=middlewares)
    app.on_response_prepare.append(_security_headers)
    app[STORE] = store

    def html(title: str, active: str, body: str, *, live: bool = True, status: int = 200) -> web.Response:
        text = pages.layout(title, active, body, version=store.version, live=live)
        return web.Response(
            text=text, content_type="text/html", status=status, headers={"Cache-Control": "no-store"}
        )

    def json(value: Any, status: int = 200) -> web.Response:
        return web.Response(body=orjson.dumps(value), content_type="application/json", status=status)

    def page_of(request: web.Request, param: str = "page") -> int:
        try:
            return max(1, int(request.query.get(param, "1")))
        except ValueError:
            return 1

    # ---- placements ------------------------------------------------------------------------
    def rows() -> list[PlacementRow]:
        fleet = store.fleet
        return [placement_row(k, fleet.placements.get(k), store.latest(k)) for k in store.placement_keys()]

    def placement_filter(request: web.Request) -> PlacementFilter:
        q = request.query
        return PlacementFilter(
            q.get("namespace", ""), q.get("label", ""), q.get("condition", ""), q.get("q", "")
        )

    async def placements(request: web.Request) -> web.Response:
        flt = placement_filter(request)
        every = rows()
        matching = [r for r in every if flt.admits(r)]
        page = page_of(request)
        pages_total = max(1, math.ceil(len(matching) / PAGE_SIZE))
        shown = matching[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        namespaces = sorted({r.namespace for r in every})
        body = pages.placements_page(shown, len(matching), flt, namespaces, page, pages_total)
        return html("Placements", "placements", body)

    async def api_placements(request: web.Request) -> web.Response:
        flt = placement_filter(request)
        return json({"version": store.version, "placements": [r.to_json() for r in rows() if flt.admits(r)]})

    def spec_text(key: str) -> str:
        found = store.fleet.placements.get(key)
        if found is None:
            return ""
        body = found.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        body = {"apiVersion": found.api_version, "kind": "Placement", **body}
        return yaml_document(body)

    def key_of(request: web.Request) -> str:
        return f"{request.match_info['namespace']}/{request.match_info['name']}"

    def seq_of(request: web.Request) -> int | None:
        text = request.query.get("seq")
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            raise web.HTTPBadRequest(text=f"seq: not a number: {text!r}") from None

    def shown(key: str, seq: int | None) -> DecisionRecord | None:
        record = store.record(key, seq)
        if record is None and seq is not None:
            raise web.HTTPNotFound(text=f"{key} has no seq {seq}")
        return record

    async def placement(request: web.Request) -> web.Response:
        key = key_of(request)
        if not store.knows(key):
            return html(
                "Not found", "placements", pages.not_found(f"no placement {key}"), live=False, status=404
            )
        record = shown(key, seq_of(request))
        fleet = store.fleet
        spec = fleet.placements.get(key)
        latest = store.latest(key)
        explanation = await store.explain(record) if record is not None else None
        result = explanation.result if explanation is not None else None
        now = clock()
        # "every cluster, as it was now": a cluster that joined the fleet after the last change
        # (and so did not change the decision) is shown with its verdict evaluated now
        joined = None
        is_now = record is not None and latest is not None and record.seq == latest.seq
        if (
            is_now
            and result is not None
            and spec is not None
            and set(fleet.clusters) - set(result["explain"])
        ):
            joined = await store.off_loop(
                lambda: result_json(schedule(spec, fleet, now, options=store.engine), None, spec, fleet, now)[
                    "explain"
                ]
            )
        verdicts = cluster_verdicts(result["explain"], joined) if result is not None else []
        decided = store.decided_by(key)
        expiries = toleration_expiries(spec, fleet, decided, now) if spec is not None else []
        requeue = requeue_reason(latest, spec, fleet, expiries, addon_resync_s)
        agreement: HubAnswer | None = None
        if hub is not None:
            agreement = await hub.ask(key, latest, store.explain)
        body = pages.placement_page(
            placement_row(key, spec, latest),
            store.timeline(key),
            record,
            explanation,
            verdicts,
            expiries,
            bool(spec is not None and spec.spec.tolerations),
            requeue,
            store.rollouts.referencing(key),
            spec_text(key),
            agreement,
        )
        return html(key, "placements", body)

    async def api_placement(request: web.Request) -> web.Response:
        key = key_of(request)
        if not store.knows(key):
            return json({"error": f"no placement {key}"}, 404)
        latest = store.latest(key)
        return json(
            {
                "placement": placement_row(key, store.fleet.placements.get(key), latest).to_json(),
                "timeline": [dict(d.value) for d in store.timeline(key)],
            }
        )

    async def api_explanation(request: web.Request) -> web.Response:
        key = key_of(request)
        record = shown(key, seq_of(request))
        if record is None:
            return json({"error": f"no decision of {key}"}, 404)
        return json((await store.explain(record)).to_json())

    # ---- fleet -----------------------------------------------------------------------------
    def clusters_json(query: str) -> list[dict[str, Any]]:
        fleet = store.fleet
        uses: dict[str, int] = {}
        for clusters in store.decided().values():
            for c in clusters:
                uses[c] = uses.get(c, 0) + 1
        scores: dict[str, list[dict[str, Any]]] = {}
        for (namespace, resource), score in sorted(fleet.scores.items()):
            until = score.status.valid_until
            scores.setdefault(namespace, []).append(
                {
                    "resource": resource,
                    "scores": {s.name: s.value for s in score.status.scores},
                    "validUntil": pages.iso(until) if until is not None else None,
                }
            )
        out = []
        for name in sorted(fleet.clusters):
            if query and query.lower() not in name.lower():
                continue
            info = fleet.clusters[name]
            kind, profile_namespace = store.cluster_source(name)
            out.append(
                {
                    "name": name,
                    "source": {"kind": kind, "namespace": profile_namespace},
                    "labels": dict(info.labels),
                    "claims": dict(info.claims),
                    "taints": [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in info.taints],
                    "allocatable": {k: str(v) for k, v in info.obj.status.allocatable.items()},
                    "scores": scores.get(name, []),
                    "placements": uses.get(name, 0),
                }
            )
        return out

    async def fleet_page(request: web.Request) -> web.Response:
        query = request.query.get("q", "")
        clusters = clusters_json(query)
        page = page_of(request)
        total_pages = max(1, math.ceil(len(clusters) / PAGE_SIZE))
        body = pages.fleet_page(
            clusters[(page - 1) * PAGE_SIZE : page * PAGE_SIZE], len(clusters), query, page, total_pages
        )
        return html("Fleet", "fleet", body)

    async def api_fleet(request: web.Request) -> web.Response:
        return json({"version": store.version, "clusters": clusters_json(request.query.get("q", ""))})

    async def matrix(request: web.Request) -> web.Response:
        decided = store.decided()
        uses: dict[str, int] = dict.fromkeys(store.fleet.clusters, 0)
        for clusters in decided.values():
            for c in clusters:
                uses[c] = uses.get(c, 0) + 1
        sort, psort = request.query.get("sort", "name"), request.query.get("psort", "name")
        cluster_list = sorted(uses.items(), key=(lambda kv: (-kv[1], kv[0])) if sort == "uses" else None)
        placement_list = sorted(
            ((k, len(v)) for k, v in decided.items() if v),
            key=(lambda kv: (-kv[1], kv[0])) if psort == "size" else None,
        )
        page, cols = page_of(request), page_of(request, "cols")
        paging = (
            page,
            max(1, math.ceil(len(cluster_list) / MATRIX_ROWS)),
            cols,
            max(1, math.ceil(len(placement_list) / MATRIX_COLS)),
        )
        body = pages.matrix_page(
            cluster_list[(page - 1) * MATRIX_ROWS : page * MATRIX_ROWS],
            placement_list[(cols - 1) * MATRIX_COLS : cols * MATRIX_COLS],
            decided,
            {"sort": sort, "psort": psort},
            paging,
        )
        return html("Clusters × placements", "matrix", body)

    # ---- what-if ---------------------------------------------------------------------------
    async def what_if(request: web.Request) -> web.Response:
        keys = sorted(store.fleet.placements)
        key = request.query.get("placement") or (keys[0] if keys else "")
        body = pages.what_if_page(key, keys, spec_text(key), None, None, [], None)
        return html("What-if", "what-if", body, live=False)

    async def what_if_post(request: web.Request) -> web.Response:
        form = await request.post()
        text, key = str(form.get("spec", "")), str(form.get("placement", ""))
        keys = sorted(store.fleet.placements)
        error: str | None = None
        try:
            parsed = [parse_object(doc, where) for where, doc in documents_of(text, "spec")]
        except ObjectError as e:
            parsed, error = [], str(e)
        if error is None and not (len(parsed) == 1 and isinstance(parsed[0], Placement)):
            error = "give exactly one Placement"
        if error is not None:
            body = pages.what_if_page(key, keys, text, None, None, [], error)
            return html("What-if", "what-if", body, live=False, status=400)
        modified = parsed[0]
        assert isinstance(modified, Placement)
        now = clock()
        fleet = store.fleet
        result = await store.off_loop(
            lambda: result_json(
                schedule(modified, fleet, now, options=store.engine), None, modified, fleet, now
            )
        )
        latest = store.latest(modified.key)
        today = None if latest is None or latest.deleted else list(latest.value.get("decisions") or ())
        verdicts = cluster_verdicts(result["explain"])
        body = pages.what_if_page(modified.key, keys, text, result, today, verdicts, None)
        return html("What-if", "what-if", body, live=False)

    # ---- rollouts --------------------------------------------------------------------------
    def rollout_rows(query: str = "") -> list[RolloutRow]:
        keys = [k for k in store.rollouts.rollout_keys() if query.lower() in k.lower()]
        return [rollout_row(store.rollouts, k, store.groups, lines=False) for k in keys]

    async def rollouts(request: web.Request) -> web.Response:
        query = request.query.get("q", "")
        note = (
            None
            if store.rollouts_topic_exists
            else f"The rollout topics ({store.prefix}rollouts, …) do not exist under this prefix yet; "
            "rollouts appear here once they do."
        )
        return html("Rollouts", "rollouts", rollout_pages.rollouts_page(rollout_rows(query), query, note))

    async def api_rollouts(request: web.Request) -> web.Response:
        rows = rollout_rows(request.query.get("q", ""))
        return json({"version": store.version, "rollouts": [r.to_json() for r in rows]})

    async def rollout(request: web.Request) -> web.Response:
        key = key_of(request)
        if key not in store.rollouts.rollout_keys():
            return html("Not found", "rollouts", pages.not_found(f"no rollout {key}"), live=False, status=404)
        body = rollout_pages.rollout_page(
            rollout_row(store.rollouts, key, store.groups), store.rollouts.timeline(key)
        )
        return html(f"Rollout {key}", "rollouts", body)

    async def api_rollout(request: web.Request) -> web.Response:
        key = key_of(request)
        if key not in store.rollouts.rollout_keys():
            return json({"error": f"no rollout {key}"}, 404)
        row = rollout_row(store.rollouts, key, store.groups)
        return json(
            {
                "rollout": row.to_json(),
                "object": store.rollouts.objects.get(key),
                "state": store.rollouts.states.get(key),
                "clusters": [line.to_json() for p in row.placements for line in p.lines],
                "timeline": store.rollouts.timeline(key),
            }
        )

    # ---- queues ----------------------------------------------------------------------------
    def queue_note() -> str | None:
        if store.queues_topic_exists:
            return None
        return (
            f"The queue placer's topics ({store.prefix}queue-configs, {store.prefix}app-placements) "
            "do not exist under this prefix yet; queues appear here once they do."
        )

    async def queues_now() -> tuple[list[PartitionTree], list[dict[str, Any]], int, str]:
        """The trees, the newest placements (newest first), how many there are, the config in force."""

        def read() -> tuple[list[PartitionTree], list[dict[str, Any]], int, str]:
            recorded, _ = store.queues.recorded()
            newest = [placement_json(r) for r in reversed(recorded[-QUEUE_PLACEMENTS_SHOWN:])]
            return store.queues.trees(), newest, len(recorded), store.queues.config_text()

        return await store.off_loop(read)

    async def queues(_request: web.Request) -> web.Response:
        trees, newest, total, text = await queues_now()
        body = queue_pages.queues_page(trees, newest, total, text, "", queue_note())
        return html("Queues", "queues", body)

    async def api_queues(_request: web.Request) -> web.Response:
        trees, newest, total, _ = await queues_now()
        return json(
            {
                "version": store.version,
                "topicsExist": store.queues_topic_exists,
                "partitions": [t.to_json() for t in trees],
                "placements": newest,
                "placementsTotal": total,
            }
        )

    async def queues_what_if(request: web.Request) -> web.Response:
        form = await request.post()
        text, partition = str(form.get("config", "")), str(form.get("partition", ""))
        trees, newest, total, _ = await queues_now()

        def page(status: int, **answer: Any) -> web.Response:
            body = queue_pages.queues_page(trees, newest, total, text, partition, queue_note(), **answer)
            return html("Queues", "queues", body, live=False, status=status)

        try:
            config = parse_config(text)
        except ConfigError as e:
            return page(400, problems=e.problems)
        if partition and partition not in config.partitions:
            known = ", ".join(sorted(config.partitions))
            return page(400, error=f"the config does not configure partition {partition!r} (it has {known})")

        def evaluate() -> QueueWhatIf:
            recorded, unreadable = store.queues.recorded()
            # freeze=False: a server runs many what-ifs, and each result's placer must be freed
            result = what_if_queues(recorded, config, partition=partition or None, freeze=False)
            result.unreadable = unreadable
            return result

        return page(200, result=await store.off_loop(evaluate))

    # ---- the rest --------------------------------------------------------------------------
    async def index(_request: web.Request) -> web.Response:
        raise web.HTTPFound("/placements")

    async def version(_request: web.Request) -> web.Response:
        return json(store.summary())

    async def events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        seen = -1
        try:
            while True:
                current = await store.wait_change(seen, HEARTBEAT_S)
                if current != seen:
                    seen = current
                    await response.write(b"data: " + orjson.dumps(store.summary()) + b"\n\n")
                else:
                    await response.write(b": heartbeat\n\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    def asset(text: str, content_type: str) -> Handler:
        async def serve(_request: web.Request) -> web.Response:
            return web.Response(
                text=text, content_type=content_type, headers={"Cache-Control": "max-age=300"}
            )

        return serve

    app.router.add_get("/", index)
    app.router.add_get("/placements", placements)
    app.router.add_get("/placements/{namespace}/{name}", placement)
    app.router.add_get("/fleet", fleet_page)
    app.router.add_get("/fleet/matrix", matrix)
    app.router.add_get("/what-if", what_if)
    app.router.add_post("/what-if", what_if_post)
    app.router.add_get("/rollouts", rollouts)
    app.router.add_get("/rollouts/{namespace}/{name}", rollout)
    app.router.add_get("/queues", queues)
    app.router.add_post("/queues/what-if", queues_what_if)
    app.router.add_get("/api/version", version)
    app.router.add_get("/api/events", events)
    app.router.add_get("/api/placements", api_placements)
    app.router.add_get("/api/placements/{namespace}/{name}", api_placement)
    app.router.add_get("/api/placements/{namespace}/{name}/explanation", api_explanation)
    app.router.add_get("/api/fleet", api_fleet)
    app.router.add_get("/api/rollouts", api_rollouts)
    app.router.add_get("/api/rollouts/{namespace}/{name}", api_rollout)
    app.router.add_get("/api/queues", api_queues)

    async def favicon(_request: web.Request) -> web.Response:
        # browsers ask for it on every page: nothing to show, and no 404 to log
        return web.Response(status=204, headers={"Cache-Control": "max-age=86400"})

    app.router.add_get("/favicon.ico", favicon)
    app.router.add_get("/static/explorer.css", asset(STYLESHEET, "text/css"))
    app.router.add_get("/static/explorer.js", asset(SCRIPT, "application/javascript"))
    return app
