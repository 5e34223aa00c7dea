"""What the pages show, without a broker: verdicts, filters, tolerations, escaping."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given
from hypothesis import strategies as st

from fleetplace.services.explorer import ExplorerStore, create_app
from fleetplace.services.explorer.pages import verdict_table
from fleetplace.services.explorer.views import (
    ClusterVerdict,
    PlacementFilter,
    PlacementRow,
    cluster_verdicts,
    toleration_expiries,
)
from fleetplace.services.rollout.listing import Reported, counts, placement_counts, placement_lines
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import ManagedCluster, Placement
from fleetplace.shared.bus.records import Record
from fleetplace.shared.placement import Fleet, apply_object
from tests.explorer.pages import Elements, cluster_rows

NOW = datetime(2026, 11, 22, 5, 0, tzinfo=UTC)
SCORED = st.fixed_dictionaries(
    {
        "total": st.integers(-200, 200),
        "selected": st.booleans(),
        "prioritizers": st.dictionaries(
            st.sampled_from(["Balance", "Steady", "ResourceAllocatableCPU"]),
            st.fixed_dictionaries({"score": st.integers(-100, 100), "weight": st.integers(-3, 3)}),
        ),
    }
)
FILTERED = st.fixed_dictionaries(
    {"filteredBy": st.sampled_from(["Predicate", "TaintToleration"]), "reason": st.text()}
)


@given(st.dictionaries(st.text(min_size=1), st.one_of(SCORED, FILTERED), max_size=12))
def test_verdicts_rank_selected_then_outranked_then_filtered_and_render_every_number(
    explain: dict[str, Any],
) -> None:
    verdicts = cluster_verdicts(explain)
    assert sorted(v.cluster for v in verdicts) == sorted(explain)
    ranks = [("selected", "outranked", "filtered").index(v.verdict) for v in verdicts]
    assert ranks == sorted(ranks)
    for a, b in itertools.pairwise(verdicts):
        if a.verdict == b.verdict and a.total is not None and b.total is not None:
            assert a.total >= b.total
    shown = cluster_rows(verdict_table(verdicts))  # names of any text survive escaping
    for cluster, ex in explain.items():
        verdict, total, parts = shown[cluster]
        if "filteredBy" in ex:
            assert verdict == "filtered" and total is None
        else:
            assert total == ex["total"]
            assert sorted(parts) == sorted(
                (p, v["score"], v["weight"]) for p, v in ex["prioritizers"].items()
            )


def _row(**kw: Any) -> PlacementRow:
    base: dict[str, Any] = {
        "key": "apps/web",
        "namespace": "apps",
        "name": "web",
        "labels": {"team": "blue"},
        "selected": 2,
        "wanted": 2,
        "conditions": (
            {"type": "PlacementMisconfigured", "status": "False"},
            {"type": "PlacementSatisfied", "status": "True"},
        ),
        "groups": (),
        "changed_at": None,
        "trigger": "",
        "seq": 1,
        "deleted": False,
    }
    return PlacementRow(**(base | kw))


def test_filters_match_namespace_label_condition_and_search() -> None:
    row = _row()
    assert PlacementFilter().admits(row)
    assert PlacementFilter(namespace="apps", label="team=blue", condition="Satisfied", query="WE").admits(row)
    assert not PlacementFilter(namespace="other").admits(row)
    assert not PlacementFilter(label="team=red").admits(row)
    assert PlacementFilter(label="team").admits(row)
    assert not PlacementFilter(condition="Misconfigured").admits(row)
    broken = _row(
        conditions=({"type": "PlacementMisconfigured", "status": "True", "message": "bad selector"},)
    )
    assert PlacementFilter(condition="Misconfigured").admits(broken)
    assert broken.misconfigured == "bad selector"


def test_tolerations_show_when_each_matched_taint_runs_out() -> None:
    fleet = Fleet()
    added = NOW - timedelta(seconds=2)
    cluster = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "c1"},
        "spec": {
            "taints": [
                {"key": "unreachable", "effect": "NoSelect", "timeAdded": added.isoformat()},
                {"key": "gpu", "effect": "NoSelect", "timeAdded": added.isoformat()},
            ]
        },
    }
    obj = parse_object(cluster, "c1")
    assert isinstance(obj, ManagedCluster)
    apply_object(fleet, obj, cluster)
    placement = parse_object(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"namespace": "apps", "name": "web"},
            "spec": {
                "tolerations": [
                    {"key": "unreachable", "operator": "Exists", "tolerationSeconds": 5},
                    {"key": "gpu", "operator": "Exists"},
                ]
            },
        },
        "web",
    )
    assert isinstance(placement, Placement)
    expiries = toleration_expiries(placement, fleet, frozenset({"c1"}), NOW)
    assert [(e.taint, e.deadline, e.decided) for e in expiries] == [
        ("unreachable:NoSelect", added + timedelta(seconds=5), True),
        ("gpu:NoSelect", None, True),
    ]


async def test_rollouts_page_says_none_and_whether_the_topics_exist() -> None:
    store = ExplorerStore("p.")
    async with TestClient(TestServer(create_app(store))) as client:
        text = await (await client.get("/rollouts")).text()
        assert "No rollouts." in text and "p.rollouts" in text and "do not exist" in text
        store.rollouts_topic_exists = True
        text = await (await client.get("/rollouts")).text()
        assert "No rollouts." in text and "do not exist" not in text
        assert (await client.get("/rollouts/apps/web")).status == 404
        assert (await client.get("/placements")).status == 200  # an empty store renders too
        assert (await client.get("/static/explorer.js")).status == 200


def test_a_verdict_row_is_one_row_whatever_the_cluster_is_called() -> None:
    hostile = '"><script>alert(1)</script>'
    html = verdict_table([ClusterVerdict(hostile, "filtered", "<b>why</b>", None, ())])
    assert "<script>" not in html and "<b>" not in html
    assert list(cluster_rows(html)) == [hostile]


def test_the_command_refuses_to_serve_off_loopback_without_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from fleetplace.services.cli import app

    monkeypatch.delenv("FLEETPLACE_DEBUG_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["explorer", "-b", "127.0.0.1:1", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "give --token" in result.output


NAMES = st.sampled_from([f"c{i}" for i in range(8)])
STATUS = st.sampled_from(["ToApply", "Progressing", "Succeeded", "Failed", "TimeOut", "Skip"])


@given(
    groups=st.lists(st.lists(NAMES, max_size=4), max_size=4),
    listed=st.dictionaries(NAMES, STATUS, max_size=4),
    reported=st.dictionaries(NAMES, st.sampled_from(["Progressing", "Succeeded", "Failed", "Skip"])),
)
def test_every_placed_cluster_has_one_line_with_the_state_first_then_the_report(
    groups: list[list[str]], listed: dict[str, str], reported: dict[str, str]
) -> None:
    placed = {c for g in groups for c in g}
    entry = {
        "name": "web",
        "clustersToRollout": [
            {"clusterName": c, "groupName": "", "groupIndex": 0, "status": s, "timeOutTime": None}
            for c, s in sorted(listed.items())
        ],
    }
    decision = [{"groupName": f"g{i}", "groupIndex": i, "clusters": g} for i, g in enumerate(groups)]
    reports = {c: Reported(s, None) for c, s in reported.items()}
    lines = placement_lines(entry, decision, reports)
    by_cluster = {line.cluster: line for line in lines}
    assert len(by_cluster) == len(lines) == len(placed | set(listed))
    for cluster, line in by_cluster.items():
        # the status the state lists it with, else the one reported, else ToApply
        assert line.status == (listed.get(cluster) or reported.get(cluster) or "ToApply"), cluster
    assert sum(counts(lines).values()) == len(lines)


@given(
    groups=st.lists(st.lists(NAMES, max_size=4), max_size=4),
    to_rollout=st.dictionaries(NAMES, STATUS, max_size=4),
    timed_out=st.lists(NAMES, max_size=3, unique=True),
    removed=st.lists(NAMES, max_size=2, unique=True),
    reported=st.dictionaries(NAMES, st.sampled_from(["Progressing", "Succeeded", "Failed", "Skip"])),
)
def test_the_lists_counts_made_without_lines_are_the_lines_counts(
    groups: list[list[str]],
    to_rollout: dict[str, str],
    timed_out: list[str],
    removed: list[str],
    reported: dict[str, str],
) -> None:
    def entries(statuses: dict[str, str]) -> list[dict[str, Any]]:
        return [
            {"clusterName": c, "groupName": "", "groupIndex": 0, "status": s, "timeOutTime": None}
            for c, s in statuses.items()
        ]

    entry = {
        "name": "web",
        "clustersToRollout": entries(to_rollout),
        "clustersTimeOut": entries(dict.fromkeys(timed_out, "TimeOut")),
        "clustersRemoved": entries(dict.fromkeys(removed, "Succeeded")),
    }
    decision = [{"groupName": f"g{i}", "groupIndex": i, "clusters": g} for i, g in enumerate(groups)]
    reports = {c: Reported(s, None) for c, s in reported.items()}
    assert placement_counts(entry, decision, reports) == counts(placement_lines(entry, decision, reports))


async def test_rollout_pages_escape_every_value() -> None:
    hostile = '"><script>alert(1)</script>'
    store = ExplorerStore("p.")
    key = f"apps/{hostile}"
    diff = {"rollout": key, "seq": 1, "revision": hostile, "evaluatedAt": hostile, "added": [hostile]}
    diff |= {"trigger": {"kind": "rollout", "key": hostile}, "clusters": [hostile]}
    store.add(
        [
            Record("p.rollout-decisions", 0, 0, key, orjson.dumps(diff)),
            Record(
                "p.rollout-status", 0, 0, f"{key}/x", orjson.dumps({"revision": hostile, "status": "Failed"})
            ),
        ]
    )
    async with TestClient(TestServer(create_app(store))) as client:
        listing = await (await client.get("/rollouts")).text()
        page = await (await client.get(f"/rollouts/apps/{quote(hostile, safe='')}")).text()
    for text in (listing, page):
        # shown as text, whichever entities escape it
        assert "<script>alert" not in text and hostile in Elements(text).text


def test_a_multi_line_filter_reason_is_shown_once_in_monospace() -> None:
    error = (
        "compilation failed: ERROR: <input>:1:32: Syntax error: mismatched input '=='\n"
        " | cluster.metadata.labels['x'] ==== 1\n"
        " | ...............................^"
    )
    verdicts = [ClusterVerdict(f"c{i}", "filtered", f"Predicate: {error}", None, ()) for i in range(3)]
    html = verdict_table(verdicts)
    assert html.count("==== 1") == 1 and html.count("compilation failed") == 1
    blocks = [a for tag, a in Elements(html).elements if tag == "pre" and "data-error" in a]
    assert len(blocks) == 1 and "code" in blocks[0]["class"].split()
    (block,) = re.findall(r"<pre[^>]*>(.*?)</pre>", html, re.S)
    assert unescape(block) == f"Predicate: {error}"  # its lines kept as they are
    assert list(cluster_rows(html)) == ["c0", "c1", "c2"]
    assert Elements(html).text.count("Predicate: the error above") == 3


async def test_small_things_favicon_plural_group_names_and_one_time_format() -> None:
    store = ExplorerStore("p.")
    diff = {
        "rollout": "apps/web",
        "seq": 1,
        "revision": "v1",
        "evaluatedAt": "2026-01-01T00:06:00.123456Z",
        "trigger": {"kind": "rollout", "key": "apps/web"},
        "clusters": ["c1"],
        "added": ["c1"],
        "nextRecheckAt": "2026-01-01T00:16:00Z",
    }
    state = {
        "rollout": "apps/web",
        "seq": 1,
        "revision": "v1",
        "clusters": ["c1"],
        "placements": [
            {
                "name": "web",
                "decided": True,
                "clustersToRollout": [
                    {"clusterName": "c1", "groupName": "", "groupIndex": 1, "status": "ToApply"}
                ],
            }
        ],
        "complete": False,
        "maxFailureBreach": False,
    }
    store.add(
        [
            Record("p.rollout-decisions", 0, 0, "apps/web", orjson.dumps(diff)),
            Record("p.rollout-state", 0, 0, "apps/web", orjson.dumps(state)),
        ]
    )
    async with TestClient(TestServer(create_app(store))) as client:
        favicon = await client.get("/favicon.ico")
        assert favicon.status == 204
        text = await (await client.get("/rollouts/apps/web")).text()
    page = Elements(text)
    assert "Timeline (1 diff)" in page.text
    assert "#1" in page.text and "(default)" not in page.text and "— #" not in page.text
    shown = re.findall(r"<time[^>]*>([^<]*)</time>", text)
    assert "2026-01-01T00:06:00Z" in shown and "2026-01-01T00:16:00Z" in shown
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t) for t in shown), shown


def test_in_a_breached_rollout_the_clusters_not_told_will_not_be_told_while_it_lasts() -> None:
    failed = {"clusterName": "c1", "groupName": "canary", "groupIndex": 0, "status": "Failed"}
    decision = [
        {"groupName": "canary", "groupIndex": 0, "clusters": ["c1"]},
        {"groupName": "", "groupIndex": 1, "clusters": ["c2", "c3"]},
    ]
    for breach, waiting in ((True, "not told while maxFailures is breached"), (False, "waits for its turn")):
        entry = {"name": "web", "clustersToRollout": [failed], "maxFailureBreach": breach}
        lines = {line.cluster: line for line in placement_lines(entry, decision, {})}
        assert lines["c2"].next == lines["c3"].next == waiting
        assert lines["c1"].next == "failed: counts as a failure"
