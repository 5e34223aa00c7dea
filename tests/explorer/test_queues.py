"""The explorer's Queues page over the demo's queue history on the test broker
(tests/explorer/queue_history.py): the tree and the placements are what the recorded
`app-placements` say, and the what-if form answers as `fleetplace queues what-if` does."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import orjson
import pytest
import yaml
from aiohttp.test_utils import TestClient, TestServer

from fleetplace.services.auditor.history import History, read_history
from fleetplace.services.auditor.queue_whatif import (
    QueueWhatIf,
    RecordedApplication,
    recorded_applications,
    what_if_queues,
)
from fleetplace.services.explorer import Explorer, ExplorerStore, create_app
from fleetplace.services.explorer.queue_book import QueueBook
from fleetplace.shared.bus.envelope import format_time
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.queueing import ConfigError, parse_config
from fleetplace.shared.settings import Settings
from tests.auditor.test_queue_audit import busy_queue_history
from tests.explorer.pages import Elements
from tests.explorer.queue_history import APPS, CONFIG_TEXT, NEXT_CONFIG_TEXT

HOSTILE = '"><script>alert(1)</script>'


def configured_queues(text: str) -> set[str]:
    """Every queue path the config's default partition names."""
    out: set[str] = set()

    def walk(queues: list[dict[str, Any]], parent: str) -> None:
        for q in queues:
            path = f"{parent}.{q['name']}" if parent else q["name"]
            out.add(path)
            walk(q.get("queues") or [], path)

    (partition,) = yaml.safe_load(text)["partitions"]
    walk(partition["queues"], "")
    return out


async def recorded_of(settings: Settings) -> list[RecordedApplication]:
    history = await read_history(settings.kafka, Topics(settings.topic_prefix))
    recorded, unreadable = recorded_applications(history)
    assert unreadable == []
    return recorded


@pytest.fixture
async def explorer(demo_settings: Settings) -> AsyncIterator[Explorer]:
    async with Explorer(demo_settings, port=0) as running:
        await running.wait_caught_up(30)
        yield running


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.text()


async def _post(url: str, data: dict[str, str]) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.post(url, data=data) as response:
        return response.status, await response.text()


def change_rows(text: str) -> list[tuple[str, ...]]:
    keys = (
        "data-change-app",
        "data-change",
        "data-before",
        "data-after",
        "data-rule-before",
        "data-rule-after",
    )
    return [tuple(a[k] for k in keys) for a in Elements(text).with_attr("data-change-app")]


def expected_rows(result: QueueWhatIf) -> list[tuple[str, ...]]:
    return [
        (
            c.application,
            str(c.change),
            c.before.queue or "",
            c.after.queue or "",
            c.before.rule or "",
            c.after.rule or "",
        )
        for c in result.changes
    ]


def summary_of(text: str) -> dict[str, int]:
    (found,) = [a for a in Elements(text).with_attr("data-summary-applications")]
    return {
        k.removeprefix("data-summary-"): int(v) for k, v in found.items() if k.startswith("data-summary-")
    }


integration = pytest.mark.integration


@integration
async def test_the_page_lists_the_tree_and_the_placements_recorded(
    explorer: Explorer, demo_settings: Settings
) -> None:
    recorded = await recorded_of(demo_settings)
    assert sorted(r.application.application_id for r in recorded) == sorted(a["applicationID"] for a in APPS)
    status, text = await _get(explorer.url + "/queues")
    assert status == 200
    page = Elements(text)
    assert "/queues" in {a["href"] for a in page.with_attr("href")}

    # the tree: the configured queues, and the ones the recorded placements went to and no config names
    rows = {a["data-queue"]: a for a in page.with_attr("data-queue") if "data-dynamic" in a}
    configured = configured_queues(CONFIG_TEXT)
    placed = Counter(r.answer.queue for r in recorded if r.answer.queue is not None)
    assert set(rows) == configured | set(placed)
    assert {q for q, a in rows.items() if a["data-dynamic"] == "1"} == set(placed) - configured
    assert {"root.tenants.web", "root.tenants.ml"} <= set(placed) - configured  # the history created two
    for queue, n in placed.items():
        assert int(rows[queue]["data-applications"]) == n, queue

    # the placements: newest first, each with the answer it was given and the rule that gave it
    shown = [
        (a["data-app"], a["data-queue"], a["data-rule"], a["data-rejected"])
        for a in page.with_attr("data-app")
    ]
    assert shown == [
        (r.application.application_id, r.answer.queue or "", r.answer.rule or "", str(int(r.answer.rejected)))
        for r in reversed(recorded)
    ]
    assert [a for a in shown if a[3] == "1"] == [("gpu-job", "", "", "1")]

    _, api = await _get(explorer.url + "/api/queues")
    body = orjson.loads(api)
    assert body["topicsExist"] is True and body["placementsTotal"] == len(recorded)
    assert [p["applicationID"] for p in body["placements"]] == [a for a, *_ in shown]
    (default,) = [p for p in body["partitions"] if p["partition"] == "default"]
    assert {q["queue"]: q["dynamic"] for q in default["queues"]} == {
        q: a["data-dynamic"] == "1" for q, a in rows.items()
    }


@integration
async def test_the_what_if_form_reports_what_queues_what_if_reports(
    explorer: Explorer, demo_settings: Settings
) -> None:
    recorded = await recorded_of(demo_settings)
    for partition in ("", "default"):
        expected = what_if_queues(recorded, parse_config(NEXT_CONFIG_TEXT), partition=partition or None)
        assert expected.changes, "the change under review moves or refuses some recorded applications"
        status, text = await _post(
            explorer.url + "/queues/what-if", {"config": NEXT_CONFIG_TEXT, "partition": partition}
        )
        assert status == 200
        assert change_rows(text) == expected_rows(expected)
        assert summary_of(text) == {
            "applications": expected.summary()["applications"],
            "unchanged": expected.summary()["unchanged"],
            "moved": expected.summary()["moved"],
            "newly-rejected": expected.summary()["newlyRejected"],
            "newly-accepted": expected.summary()["newlyAccepted"],
            "queues-created": expected.summary()["queuesCreated"],
            "not-evaluated": expected.summary()["notEvaluated"],
        }
        created = {a["data-created"] for a in Elements(text).with_attr("data-created")}
        assert created == {f"{p}:{q}" for p, q in expected.queues_created}
    # the config in force, evaluated against itself, changes nothing
    _, page = await _get(explorer.url + "/queues")
    textarea = page.partition("<textarea")[2].partition(">")[2].partition("</textarea>")[0]
    current = html.unescape(textarea)
    assert parse_config(current) is not None
    status, text = await _post(explorer.url + "/queues/what-if", {"config": current, "partition": ""})
    assert status == 200 and change_rows(text) == []
    assert summary_of(text)["unchanged"] == len(recorded) - summary_of(text)["not-evaluated"]


@integration
async def test_a_broken_config_shows_its_problems_and_changes_nothing(explorer: Explorer) -> None:
    broken = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        "          - name: bad name!\n    placementrules:\n      - name: nope\n"
    )
    with pytest.raises(ConfigError) as raised:
        parse_config(broken)
    _, before = await _get(explorer.url + "/api/queues")
    status, text = await _post(explorer.url + "/queues/what-if", {"config": broken, "partition": ""})
    assert status == 400
    problems = [a["data-problem"] for a in Elements(text).with_attr("data-problem")]
    assert problems == [p.path for p in raised.value.problems] and len(problems) >= 2
    for p in raised.value.problems:
        assert p.reason in Elements(text).text
    assert change_rows(text) == [] and not Elements(text).with_attr("data-summary-applications")
    assert "bad name!" in text  # the text typed stays in the form
    _, after = await _get(explorer.url + "/api/queues")
    assert orjson.loads(after) == orjson.loads(before)


def _placement(app: dict[str, Any], offset: int, **answer: Any) -> Record:
    value = {
        "applicationID": app["applicationID"],
        **answer,
        "evaluatedAt": format_time(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=offset)),
        "inputs": {"queue-configs/0": 1, "applications/0": offset + 1},
        "application": app,
    }
    return Record("p.app-placements", 0, offset, app["applicationID"], orjson.dumps(value))


async def test_hostile_ids_users_and_queue_names_stay_escaped() -> None:
    (partition,) = yaml.safe_load(CONFIG_TEXT)["partitions"]
    app = {"applicationID": HOSTILE, "user": HOSTILE, "groups": [HOSTILE], "tags": {"namespace": HOSTILE}}
    refused = {**app, "applicationID": HOSTILE + "2", "partition": HOSTILE}
    store = ExplorerStore("p.")
    store.add(
        [
            Record("p.queue-configs", 0, 0, "default", orjson.dumps(partition)),
            _placement(app, 0, queue=f"root.{HOSTILE}", rule=HOSTILE, created=True),
            _placement(refused, 1, rejected=True, reason=HOSTILE, detail=HOSTILE),
        ]
    )
    broken = f"partitions:\n  - name: default\n    queues:\n      - name: '{HOSTILE}'\n"
    async with TestClient(TestServer(create_app(store))) as client:
        pages = [await (await client.get("/queues")).text()]
        for config in (NEXT_CONFIG_TEXT, broken, f"{CONFIG_TEXT}\n# {HOSTILE}\n"):
            response = await client.post("/queues/what-if", data={"config": config, "partition": ""})
            pages.append(await response.text())
        response = await client.post("/queues/what-if", data={"config": CONFIG_TEXT, "partition": HOSTILE})
        assert response.status == 400
        pages.append(await response.text())
        api = orjson.loads(await (await client.get("/api/queues")).read())
    assert {p["applicationID"] for p in api["placements"]} == {HOSTILE, HOSTILE + "2"}
    # the what-if moved the hostile application (no rule of the new config sends it to its queue)
    assert HOSTILE in {a["data-change-app"] for a in Elements(pages[1]).with_attr("data-change-app")}
    for text in pages:
        # shown as text, whichever entities escape it
        assert "<script>alert" not in text and HOSTILE in Elements(text).text, text[:300]


async def test_a_deployment_without_queues_shows_the_page_saying_so() -> None:
    store = ExplorerStore("p.")
    async with TestClient(TestServer(create_app(store))) as client:
        response = await client.get("/queues")
        text = await response.text()
        api = orjson.loads(await (await client.get("/api/queues")).read())
    assert response.status == 200
    assert "No queue placements recorded." in Elements(text).text
    assert "p.queue-configs" in Elements(text).text  # the topics it would read do not exist
    assert api["partitions"] == [] and api["placements"] == [] and api["topicsExist"] is False


@pytest.mark.parametrize("arrival", ["record by record", "placements late and reversed"])
def test_the_book_reads_placements_as_queues_what_if_reads_them(arrival: str) -> None:
    q = busy_queue_history()
    placements = [r for r in q.log if r.topic == "q.app-placements"]
    if arrival == "record by record":
        batches = [[r] for r in q.log]
    else:
        batches = [[r for r in q.log if r not in placements], *([r] for r in reversed(placements))]
    book = QueueBook()
    for batch in batches:
        for record in batch:
            book.add(record, "q.")
        book.recorded()  # brought up to date after each batch, as a live page would
    assert book.recorded() == recorded_applications(History.of(q.log, prefix="q."))
    assert book.recorded()[0]


async def test_a_what_if_that_changes_many_lists_the_first_and_counts_them_all() -> None:
    (partition,) = yaml.safe_load(CONFIG_TEXT)["partitions"]
    apps = [
        {"applicationID": f"a{i}", "user": "u", "groups": ["dev"], "tags": {"namespace": f"n{i}"}}
        for i in range(250)
    ]
    store = ExplorerStore("p.")
    store.add(
        [
            Record("p.queue-configs", 0, 0, "default", orjson.dumps(partition)),
            *(
                _placement(a, i, queue=f"root.tenants.n{i}", rule="tag", created=True)
                for i, a in enumerate(apps)
            ),
        ]
    )
    async with TestClient(TestServer(create_app(store))) as client:
        response = await client.post("/queues/what-if", data={"config": NEXT_CONFIG_TEXT, "partition": ""})
        text = await response.text()
    assert response.status == 200
    assert summary_of(text)["moved"] == 250
    assert [row[0] for row in change_rows(text)] == [f"a{i}" for i in range(200)]
    assert "The first 200 of 250 changed applications" in Elements(text).text
