"""The explorer over the demo's history on the test broker: pages, API, numbers, live updates."""

from __future__ import annotations

import asyncio
import html
import re
import threading
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetplace.services.auditor.explain import Explanation, explain_record
from fleetplace.services.auditor.history import DecisionRecord, History, read_history
from fleetplace.services.explorer import Explorer, TokenRequired
from fleetplace.services.explorer.explainer import Explainer
from fleetplace.services.testing import running_scheduler
from fleetplace.shared.bus.codec import DEFAULT_LIMITS
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.publish import Document, plan_document, to_outgoing
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.placement.options import DEFAULT_OPTIONS
from fleetplace.shared.settings import Settings
from tests.explorer.pages import Elements, cluster_rows, timeline_rows

pytestmark = pytest.mark.integration

from fleetplace.services.commands.demo_inventory import NAMESPACE, PROFILES  # noqa: E402
from fleetplace.services.commands.demo_rollout import API as DEMO_ROLLOUT  # noqa: E402

PLACEMENTS = ("apps/web", "apps/analytics", "apps/monitoring", "apps/api", "inventory/edge")
PAGES = (
    "/placements",
    "/placements?namespace=apps&condition=Satisfied&q=web",
    "/placements/apps/web",
    "/placements/apps/web?seq=1",
    "/placements/apps/analytics",
    "/placements/apps/monitoring",
    "/fleet",
    "/fleet/matrix",
    "/fleet/matrix?sort=uses&psort=size",
    "/what-if?placement=apps/web",
    "/rollouts",
    "/queues",
)


@pytest.fixture
async def explorer(demo_settings: Settings) -> AsyncIterator[Explorer]:
    async with Explorer(demo_settings, port=0) as running:
        await running.wait_caught_up(30)
        yield running


async def _get(url: str, **kwargs: Any) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url, **kwargs) as response:
        return response.status, await response.text()


async def _history(settings: Settings) -> History:
    return await read_history(settings.kafka, Topics(settings.topic_prefix))


async def test_every_page_renders_with_the_navigation(explorer: Explorer) -> None:
    for path in PAGES:
        status, text = await _get(explorer.url + path)
        assert status == 200, (path, text[:500])
        page = Elements(text)
        links = {a["href"] for a in page.with_attr("href")}
        assert {"/placements", "/fleet", "/fleet/matrix", "/what-if", "/rollouts", "/queues"} <= links, path


async def test_no_page_needs_what_its_content_security_policy_forbids(explorer: Explorer) -> None:
    """The policy allows scripts and styles from the server's own files only: no inline script,
    no <style> element, no style attribute, no event handler attribute."""
    for path in PAGES:
        async with aiohttp.ClientSession() as http, http.get(explorer.url + path) as response:
            assert "script-src 'self'" in response.headers["Content-Security-Policy"], path
            text = await response.text()
        elements = Elements(text).elements
        assert not [a for _, a in elements if "style" in a or any(k.startswith("on") for k in a)], path
        assert not [t for t, a in elements if t == "style" or (t == "script" and "src" not in a)], path
    status, text = await _get(explorer.url + "/placements/apps/nothing")
    assert status == 404


async def test_placements_list_shows_counts_conditions_and_last_change(
    explorer: Explorer, demo_settings: Settings
) -> None:
    status, text = await _get(explorer.url + "/placements")
    assert status == 200
    rows = {a["data-placement"]: int(a["data-selected"]) for a in Elements(text).with_attr("data-placement")}
    history = await _history(demo_settings)
    latest = {d.key: d for d in sorted(history.decisions, key=lambda d: d.seq)}
    assert rows == {k: len(latest[k].value.get("decisions") or ()) for k in PLACEMENTS}
    assert rows["apps/web"] == 2 and rows["apps/analytics"] == 0  # analytics was deleted
    assert "Deleted" in text and "toleration-expired:apps/web" in text
    _, api = await _get(explorer.url + "/api/placements?condition=Deleted")
    assert [p["placement"] for p in orjson.loads(api)["placements"]] == ["apps/analytics"]
    _, api = await _get(explorer.url + "/api/placements?q=MONITOR")
    assert [p["placement"] for p in orjson.loads(api)["placements"]] == ["apps/monitoring"]


async def test_timeline_lists_every_diff_with_its_trigger(
    explorer: Explorer, demo_settings: Settings
) -> None:
    history = await _history(demo_settings)
    for key in PLACEMENTS:
        _, text = await _get(explorer.url + f"/placements/{key}")
        recorded = sorted(
            ((d.seq, str(d.trigger.get("kind"))) for d in history.decisions if d.key == key), reverse=True
        )
        assert timeline_rows(text) == recorded, key
    _, text = await _get(explorer.url + "/placements/apps/web")
    assert (4, "toleration-expired") in timeline_rows(text)


async def test_numbers_shown_are_the_engines_explanation_then(
    explorer: Explorer, demo_settings: Settings
) -> None:
    history = await _history(demo_settings)
    for d in [d for d in history.decisions if d.key == "apps/web"]:
        expected = explain_record(history, d, d.now)  # `fleetplace explain --at`'s own walk
        assert expected.result is not None and expected.reproduced
        _, text = await _get(explorer.url + f"/placements/apps/web?seq={d.seq}")
        shown = cluster_rows(text)
        assert set(shown) == set(expected.result["explain"])
        for cluster, ex in expected.result["explain"].items():
            verdict, total, parts = shown[cluster]
            if "filteredBy" in ex:
                assert (verdict, total, parts) == ("filtered", None, []), cluster
                assert ex["reason"] in Elements(text).text
            else:
                assert verdict == ("selected" if ex["selected"] else "outranked")
                assert total == ex["total"]
                assert sorted(parts) == sorted(
                    (p, v["score"], v["weight"]) for p, v in ex["prioritizers"].items()
                )
        _, api = await _get(explorer.url + f"/api/placements/apps/web/explanation?seq={d.seq}")
        assert orjson.loads(api) == orjson.loads(orjson.dumps(expected.to_json()))


async def test_the_decision_now_is_explained_for_every_cluster_of_the_fleet(
    explorer: Explorer, demo_settings: Settings
) -> None:
    history = await _history(demo_settings)
    fleet = set(explorer.store.fleet.clusters)
    for key in ("apps/web", "apps/monitoring", "apps/api"):
        latest = max((d for d in history.decisions if d.key == key), key=lambda d: d.seq)
        then = explain_record(history, latest, latest.now)
        assert then.result is not None
        _, text = await _get(explorer.url + f"/placements/{key}")
        shown = cluster_rows(text)
        assert set(shown) == fleet | set(then.result["explain"]), key
        joined = {a["data-cluster"] for a in Elements(text).with_attr("data-joined")}
        assert joined == fleet - set(then.result["explain"]), key
        # the clusters it knew are shown as the decision's own explanation has them
        for cluster in then.result["explain"]:
            assert shown[cluster][1] == then.result["explain"][cluster].get("total"), (key, cluster)
    # the demo's west-2 joined after api's last change: the page used to leave it out
    _, text = await _get(explorer.url + "/placements/apps/api")
    assert cluster_rows(text)["west-2"][0] == "filtered"


async def test_the_placement_page_shows_the_spec_it_explains(explorer: Explorer) -> None:
    _, text = await _get(explorer.url + "/placements/apps/web")
    found = re.search(r'<details id="spec">.*?<pre[^>]*>(.*?)</pre>', text, re.S)
    assert found is not None, "no collapsed spec"
    shown = yaml.safe_load(html.unescape(found.group(1)))
    placement = explorer.store.fleet.placements["apps/web"]
    assert (shown["kind"], shown["metadata"]["namespace"], shown["metadata"]["name"]) == (
        "Placement",
        "apps",
        "web",
    )
    assert shown["spec"]["numberOfClusters"] == placement.spec.number_of_clusters == 2
    assert len(shown["spec"]["tolerations"]) == len(placement.spec.tolerations)


async def test_times_read_one_way_and_unnamed_groups_one_way(explorer: Explorer) -> None:
    for path in (*PAGES, "/placements/apps/api"):
        _, text = await _get(explorer.url + path)
        shown = re.findall(r"<time[^>]*>([^<]*)</time>", text)
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t) for t in shown), (path, shown)
        assert "(default)" not in text and "— #" not in text, path
    _, text = await _get(explorer.url + "/placements")
    assert re.search(r"<time[^>]*>", text)  # the list shows its last changes as times


async def test_toleration_and_requeue_are_shown(explorer: Explorer) -> None:
    _, text = await _get(explorer.url + "/placements/apps/web")
    page = Elements(text)
    deadlines = page.with_attr("data-deadline")
    assert deadlines, "the unreachable taint on west-2 is matched by web's 5 s toleration"
    assert "cluster.open-cluster-management.io/unreachable:NoSelect" in page.text
    assert "Next requeue: no timer" in page.text


async def test_what_if_picks_from_the_current_fleet_and_diffs_against_today(explorer: Explorer) -> None:
    spec = (
        "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\n"
        "metadata: {namespace: apps, name: web}\nspec:\n  numberOfClusters: 1\n"
        "  predicates: [{requiredClusterSelector: {labelSelector: {matchLabels: {region: edge}}}}]\n"
    )
    async with aiohttp.ClientSession() as http:
        async with http.post(explorer.url + "/what-if", data={"placement": "apps/web", "spec": spec}) as r:
            assert r.status == 200
            text = await r.text()
        async with http.post(
            explorer.url + "/what-if", data={"placement": "apps/web", "spec": "kind: Nope"}
        ) as r:
            assert r.status == 400
    rows = cluster_rows(text)
    picked = [c for c, (verdict, _, _) in rows.items() if verdict == "selected"]
    assert len(picked) == 1 and picked[0].startswith("edge-")
    page = Elements(text).text
    assert f"+{picked[0]}" in page and "−east-2" in page and "−west-1" in page


async def test_what_if_shows_a_cel_error_once_in_monospace(explorer: Explorer) -> None:
    spec = (
        "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\n"
        "metadata: {namespace: apps, name: web}\nspec:\n"
        "  predicates: [{requiredClusterSelector: {celSelector: {celExpressions: ['1 ==== 1']}}}]\n"
    )
    async with (
        aiohttp.ClientSession() as http,
        http.post(explorer.url + "/what-if", data={"placement": "apps/web", "spec": spec}) as r,
    ):
        assert r.status == 200
        text = await r.text()
    rows = cluster_rows(text)
    assert len(rows) == len(explorer.store.fleet.clusters) >= 2
    assert {verdict for verdict, _, _ in rows.values()} == {"filtered"}
    # once (the spec typed in the form aside), in a monospace block, caret line and all
    spec_typed = re.search(r"<textarea[^>]*>.*?</textarea>", text, re.S)
    assert spec_typed is not None
    assert text.replace(spec_typed.group(0), "").count("==== 1") == 1
    (block,) = re.findall(r'<(?:pre|span) class="error code"[^>]*>(.*?)</(?:pre|span)>', text, re.S)
    assert "\n | 1 ==== 1\n | ....^" in html.unescape(block)
    # every cluster of the placement's cluster set (not the inventory's ClusterProfiles) points at it
    in_set = [name for name in rows if name not in PROFILES]
    assert Elements(text).text.count("Predicate: the error above") == len(in_set) >= 2


async def test_the_fleet_shows_which_clusters_came_from_cluster_profiles_and_where(
    explorer: Explorer,
) -> None:
    # the demo's inventory clusters are known only as ClusterProfiles in namespace `inventory`
    _, api = await _get(explorer.url + "/api/fleet")
    sources = {c["name"]: c["source"] for c in orjson.loads(api)["clusters"]}
    profile = {"kind": "ClusterProfile", "namespace": NAMESPACE}
    assert all(sources[n] == profile for n in PROFILES), sources
    assert sources["east-1"] == {"kind": "ManagedCluster", "namespace": None}
    _, text = await _get(explorer.url + "/fleet")
    rows = {r["data-cluster"]: r["data-source"] for r in Elements(text).with_attr("data-source")}
    assert {n: rows[n] for n in PROFILES} == dict.fromkeys(PROFILES, "ClusterProfile")
    assert rows["east-1"] == "ManagedCluster"
    shown = [e["data-namespace"] for e in Elements(text).with_attr("data-namespace")]
    assert shown == [NAMESPACE] * len(PROFILES)
    assert f"in {NAMESPACE}" in Elements(text).text


async def test_rollouts_page_lists_the_rollout_the_demo_played(explorer: Explorer) -> None:
    # the demo's rollout acts roll one rollout out, so the page and the API list exactly that one
    # (a history with none says so: tests/explorer/test_views.py)
    _, text = await _get(explorer.url + "/rollouts")
    assert [a["data-rollout"] for a in Elements(text).with_attr("data-rollout")] == [DEMO_ROLLOUT]
    assert "No rollouts." not in Elements(text).text
    _, api = await _get(explorer.url + "/api/rollouts")
    assert [r["rollout"] for r in orjson.loads(api)["rollouts"]] == [DEMO_ROLLOUT]


async def test_other_requests_are_answered_while_an_explanation_is_computed(
    explorer: Explorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    explain = Explainer.explain

    def held(self: Explainer, target: DecisionRecord) -> Explanation:
        started.set()
        release.wait(20)  # held until the other requests are answered (or it gives up)
        try:
            return explain(self, target)
        finally:
            finished.set()

    monkeypatch.setattr(Explainer, "explain", held)
    async with aiohttp.ClientSession() as http:
        # seq 1 of web is explained by no page so far: the explainer walks to it
        slow = asyncio.create_task(_get(explorer.url + "/placements/apps/web?seq=1"))
        assert await asyncio.to_thread(started.wait, 20), "the explanation did not start"
        answered = 0
        for path in ("/api/version", "/placements", "/fleet", "/fleet/matrix", "/api/fleet"):
            async with http.get(explorer.url + path) as response:
                assert response.status == 200, path
                await response.read()
            answered += 0 if finished.is_set() else 1
        release.set()
        status, text = await slow
    assert answered == 5, "requests waited for the explanation"
    assert status == 200 and "as it was then" in Elements(text).text


async def test_live_updates_arrive_while_it_runs(explorer: Explorer, demo_settings: Settings) -> None:
    before = len(explorer.store.timeline("apps/monitoring"))
    async with aiohttp.ClientSession() as http, http.get(explorer.url + "/api/events") as events:
        first = orjson.loads((await events.content.readline()).removeprefix(b"data: "))
        await events.content.readline()
        cluster = {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": "edge-3",
                "labels": {"cluster.open-cluster-management.io/clusterset": "demo", "region": "edge"},
            },
            "spec": {"hubAcceptsClient": True},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}},
        }
        topics = Topics(demo_settings.topic_prefix)
        producer = make_producer(demo_settings.kafka)
        await start_client(producer)
        try:
            await send_all(producer, to_outgoing(plan_document(Document("test", cluster)), topics))
        finally:
            await producer.stop()
        line = await asyncio.wait_for(events.content.readline(), 10)
        assert orjson.loads(line.removeprefix(b"data: "))["version"] > first["version"]
        _, fleet = await _get(explorer.url + "/api/fleet?q=edge-3")
        assert [c["name"] for c in orjson.loads(fleet)["clusters"]] == ["edge-3"]
        bootstrap = str(demo_settings.kafka.bootstrap_servers)
        async with running_scheduler(bootstrap, demo_settings.topic_prefix):
            for _ in range(200):
                if len(explorer.store.timeline("apps/monitoring")) > before:
                    break
                await asyncio.sleep(0.05)
    _, text = await _get(explorer.url + "/placements/apps/monitoring")
    newest = timeline_rows(text)[0]
    assert newest[0] == before + 1
    assert "+edge-3" in Elements(text).text


async def test_off_loopback_it_needs_a_token(demo_settings: Settings) -> None:
    with pytest.raises(TokenRequired):
        Explorer(demo_settings, host="0.0.0.0", port=0)
    async with Explorer(demo_settings, port=0, token="s3cret") as guarded:
        await guarded.wait_caught_up(30)
        status, _ = await _get(guarded.url + "/placements")
        assert status == 401
        status, _ = await _get(guarded.url + "/placements", headers={"Authorization": "Bearer s3cret"})
        assert status == 200
        # a browser keeps cookies of an IP address host; aiohttp's jar only when told to
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.get(guarded.url + "/fleet?token=s3cret") as r:
                assert r.status == 200 and r.url.path == "/fleet" and "token" not in r.url.query
            async with http.get(guarded.url + "/fleet") as r:  # the cookie it set
                assert r.status == 200


@pytest.fixture(scope="module")
def demo_history(demo_settings: Settings) -> History:
    return asyncio.run(read_history(demo_settings.kafka, Topics(demo_settings.topic_prefix)))


def test_fast_forwarded_explanations_equal_the_walked_ones(demo_history: History) -> None:
    assert len(demo_history.decisions) >= 10
    for d in demo_history.decisions:
        walked = explain_record(demo_history, d, d.now)
        jumped = explain_record(demo_history, d, d.now, fast_forward=True)
        assert jumped.to_json() == walked.to_json(), (d.key, d.seq)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(10)), park=st.booleans())
def test_the_kept_walk_explains_in_any_order_as_explain_does(
    demo_history: History, order: list[int], park: bool
) -> None:
    explainer = Explainer(demo_history, DEFAULT_LIMITS, DEFAULT_OPTIONS)
    if park:
        latest = {d.key: d for d in sorted(demo_history.decisions, key=lambda d: d.seq)}
        explainer.park(list(latest.values()))
    diffs = demo_history.decisions
    for i in order:
        d = diffs[i % len(diffs)]
        assert explainer.explain(d).to_json() == explain_record(demo_history, d, d.now).to_json(), (
            d.key,
            d.seq,
        )
