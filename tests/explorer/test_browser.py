"""The explorer in a real browser: headless Chromium (Debian's package) driven by Selenium.

Walks what a user asking "why did web move?" would: Placements, apps/web, the toleration-expiry
entry of its timeline, that entry's explanation, the fleet matrix; and what one following a
rollout would: Rollouts, one rollout by decision group, its placement. Screenshots of every page are
taken each run; `make screenshots` (FLEETPLACE_SCREENSHOTS=docs/explorer) writes them where
docs/explorer.md shows them, else they go to a temporary folder so a test run leaves the
checkout clean. Skipped, saying why, without /usr/bin/chromium.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleetplace.services.commands.demo_rollout import API as DEMO_ROLLOUT
from fleetplace.services.explorer import Explorer
from fleetplace.services.testing import running_scheduler
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.control_plane import ControlPlane
from fleetplace.shared.settings import KafkaSettings, Settings
from fleetplace.shared.testing import create_topics, unique_topic_prefix
from tests.explorer.queue_history import APPS, NEXT_CONFIG_TEXT
from tests.explorer.rollout_history import play
from tests.explorer.test_hub_agreement import shadow_hub
from tests.hub.conftest import hub  # noqa: F401  (the control plane fixture)
from tests.hub.test_writeback import ocm_writes
from tests.rollout_worker.harness import RolloutBus, running, settings_for

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ROOT = Path(__file__).resolve().parents[2]
SHOTS = (
    ROOT / os.environ["FLEETPLACE_SCREENSHOTS"]
    if os.environ.get("FLEETPLACE_SCREENSHOTS")
    else Path(tempfile.mkdtemp(prefix="fleetplace-explorer-shots-"))
)

if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
    pytest.skip(
        f"no {CHROMIUM} / {CHROMEDRIVER}: apt-get install chromium chromium-driver (.ci/run does)",
        allow_module_level=True,
    )
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extras")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@contextmanager
def explorer_thread(settings: Settings) -> Iterator[str]:
    """The explorer served from a thread with its own event loop (Selenium blocks); its URL."""
    started = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        stop = asyncio.Event()
        async with Explorer(settings, port=0) as explorer:
            await explorer.wait_caught_up(30)
            state.update(url=explorer.url, stop=stop, loop=asyncio.get_running_loop())
            started.set()
            await stop.wait()

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as e:
            state["error"] = e
            started.set()

    thread = threading.Thread(target=run, name="explorer", daemon=True)
    thread.start()
    started.wait(60)
    if "error" in state or "url" not in state:
        raise RuntimeError(f"the explorer did not start: {state.get('error')!r}")
    try:
        yield str(state["url"])
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join(15)


@pytest.fixture
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.TemporaryDirectory(prefix="explorer-chromium-")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,800",
        f"--user-data-dir={profile.name}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, for console_errors
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(str(CHROMEDRIVER)))
    driver.set_window_size(1280, 800)
    try:
        yield driver
    finally:
        driver.quit()
        profile.cleanup()


def console_errors(driver: Any) -> list[str]:
    """The console's errors since the last call (a failed request, a script error, a CSP refusal)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


# What would scroll sideways: a table or cell wider than its box inside `root`, or the page itself.
OVERFLOWING = """
const root = document.querySelector(arguments[0]);
const boxes = root.querySelectorAll(".scroll, th, td");
const out = [...boxes].filter((el) => el.scrollWidth > el.clientWidth)
  .map((el) => el.tagName + ": " + el.textContent.slice(0, 60));
const page = document.documentElement;
if (page.scrollWidth > page.clientWidth) { out.push("the page"); }
return out;
"""


def _shot(driver: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(SHOTS / f"{name}.png"))


def test_a_user_finds_why_web_moved_and_the_fleet_matrix(demo_settings: Settings, browser: Any) -> None:
    wait = WebDriverWait(browser, 15)
    with explorer_thread(demo_settings) as url:
        browser.get(url + "/placements")
        wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "tr[data-placement]")))
        assert "Placements" in browser.title
        # the keyboard reaches the page: the first Tab lands on the skip link
        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        assert browser.switch_to.active_element.text == "Skip to content"
        _shot(browser, "placements")

        browser.find_element(By.LINK_TEXT, "web").click()
        wait.until(expected_conditions.url_contains("/placements/apps/web"))
        expiry = wait.until(
            expected_conditions.visibility_of_element_located(
                (By.CSS_SELECTOR, 'tr[data-trigger="toleration-expired"]')
            )
        )
        assert "+east-2" in expiry.text and "−west-2" in expiry.text
        # the countdown script ran: the toleration on west-2 shows when it ran out
        countdown = browser.find_element(By.CSS_SELECTOR, "#tolerations [data-deadline]")
        wait.until(lambda _: "ran out" in countdown.text)
        _shot(browser, "placement")

        seq = expiry.get_attribute("data-seq")
        expiry.find_element(By.TAG_NAME, "a").click()
        wait.until(expected_conditions.url_contains(f"seq={seq}"))
        explained = wait.until(expected_conditions.visibility_of_element_located((By.ID, "explained")))
        assert f"seq {seq}" in explained.text and "toleration-expired" in explained.text
        assert "reproduces from the topics" in explained.text
        west_2 = browser.find_element(By.CSS_SELECTOR, 'tr[data-cluster="west-2"]')
        assert west_2.get_attribute("data-verdict") == "filtered" and "TaintToleration" in west_2.text
        _shot(browser, "explanation")

        browser.find_element(By.CSS_SELECTOR, 'tr[data-seq="2"] a').click()
        wait.until(expected_conditions.url_contains("seq=2"))
        then = wait.until(expected_conditions.visibility_of_element_located((By.ID, "explained")))
        assert "as it was then" in then.text
        _shot(browser, "explanation-then")

        browser.find_element(By.LINK_TEXT, "Matrix").click()
        wait.until(expected_conditions.url_contains("/fleet/matrix"))
        row = browser.find_element(By.CSS_SELECTOR, 'tr[data-cluster="east-2"]')
        assert row.text.count("●") == 3  # web, monitoring and api use east-2 now
        browser.find_element(By.LINK_TEXT, "placements using them").click()
        wait.until(expected_conditions.url_contains("sort=uses"))
        # each placement's name is centred over its column of dots
        offsets = browser.execute_script(
            """
            const table = document.querySelector("table.matrix");
            const cells = table.querySelector("tbody tr").querySelectorAll("td.cell");
            return [...table.querySelectorAll("thead th.cell a")].map((a, i) => {
              const head = a.getBoundingClientRect(), cell = cells[i].getBoundingClientRect();
              return Math.abs((head.left + head.right) / 2 - (cell.left + cell.right) / 2);
            });
            """
        )
        assert offsets and max(offsets) <= 1.5, offsets
        _shot(browser, "matrix")

        browser.find_element(By.LINK_TEXT, "Fleet").click()
        wait.until(expected_conditions.url_contains("/fleet"))
        _shot(browser, "fleet")

        browser.set_window_size(1400, 900)
        browser.get(url + "/what-if?placement=apps/web")
        spec = browser.find_element(By.ID, "spec")
        text = spec.get_attribute("value").replace("numberOfClusters: 2", "numberOfClusters: 1")
        spec.clear()
        spec.send_keys(text)
        browser.find_element(By.CSS_SELECTOR, "form[method=post] button").click()
        picked = wait.until(expected_conditions.visibility_of_element_located((By.ID, "what-if-picked")))
        assert len(picked.text.split()) == 1  # one of today's two prod clusters
        assert "removed −" in browser.find_element(By.ID, "what-if-result").text
        # at 1,400 px the result fits: no table scrolls sideways, no reason is cut
        overflowing = browser.execute_script(OVERFLOWING, "#what-if-result")
        assert overflowing == [], overflowing
        _shot(browser, "what-if")
        browser.set_window_size(1280, 800)

        # the demo's rollout acts roll out one rollout: the page lists it
        browser.get(url + "/rollouts")
        listed = browser.find_elements(By.CSS_SELECTOR, "tr[data-rollout]")
        assert [r.get_attribute("data-rollout") for r in listed] == [DEMO_ROLLOUT]

        browser.set_window_size(420, 800)
        browser.get(url + "/placements/apps/web")
        wait.until(expected_conditions.presence_of_element_located((By.ID, "timeline")))
        _shot(browser, "placement-narrow")


@pytest.fixture
def rollout_settings(broker: str) -> Settings:
    """A prefix holding a rollout history of its own, played now so the countdowns are minutes
    away; the workers are stopped again."""
    prefix = unique_topic_prefix("explorer-rollouts")
    worker_settings = settings_for(broker, prefix, clock="topic")
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=6)

    async def main() -> None:
        topics, _ = await create_topics(broker, prefix)
        async with (
            running_scheduler(broker, prefix),
            RolloutBus(broker, topics) as bus,
            running(worker_settings),
        ):
            await play(bus, worker_settings, start)

    asyncio.run(main())
    return Settings(kafka=KafkaSettings(bootstrap_servers=broker), topic_prefix=prefix)


def test_a_user_follows_a_rollout_group_by_group(rollout_settings: Settings, browser: Any) -> None:
    wait = WebDriverWait(browser, 15)
    with explorer_thread(rollout_settings) as url:
        browser.get(url + "/rollouts")
        row = wait.until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-rollout="apps/web"]'))
        )
        assert "1 Succeeded" in row.text and "1 Failed" in row.text and "2 ToApply" in row.text
        assert "Deleted" in browser.find_element(By.CSS_SELECTOR, 'tr[data-rollout="apps/batch"]').text
        _shot(browser, "rollouts")

        # the keyboard reaches the rollout's link and opens it
        link = row.find_element(By.CSS_SELECTOR, 'a[href="/rollouts/apps/web"]')
        link.send_keys(Keys.ENTER)
        wait.until(expected_conditions.url_contains("/rollouts/apps/web"))
        wave = wait.until(
            expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, '.group[data-group="wave"]'))
        )
        assert "c2" in wave.text and "c3" in wave.text
        failed = browser.find_element(By.CSS_SELECTOR, 'tr[data-cluster="c3"]')
        assert failed.get_attribute("data-status") == "Failed"
        # the countdown script ran: the wave's deadline is minutes away
        countdown = browser.find_element(By.CSS_SELECTOR, 'tr[data-cluster="c2"] [data-deadline]')
        wait.until(lambda _: countdown.text.startswith("in "))
        timeline = browser.find_elements(By.CSS_SELECTOR, "#rollout-timeline tr[data-seq]")
        assert [t.get_attribute("data-seq") for t in timeline][-1] == "1"
        _shot(browser, "rollout")

        browser.find_element(By.CSS_SELECTOR, 'section[data-placement="apps/web"] h2 a').click()
        wait.until(expected_conditions.url_contains("/placements/apps/web"))
        assert "Rolled out by: apps/web" in browser.find_element(By.ID, "summary").text

        browser.set_window_size(420, 800)
        browser.get(url + "/rollouts/apps/web")
        wait.until(expected_conditions.presence_of_element_located((By.ID, "rollout-timeline")))
        _shot(browser, "rollout-narrow")


def test_a_user_reads_the_queues_and_tries_a_rule_change(demo_settings: Settings, browser: Any) -> None:
    wait = WebDriverWait(browser, 15)
    browser.set_window_size(1400, 900)
    with explorer_thread(demo_settings) as url:
        browser.get(url + "/placements")
        browser.find_element(By.LINK_TEXT, "Queues").click()
        wait.until(expected_conditions.url_contains("/queues"))
        created = wait.until(
            expected_conditions.presence_of_element_located(
                (By.CSS_SELECTOR, 'tr[data-queue="root.tenants.web"]')
            )
        )
        assert "created by a placement" in created.text
        configured = browser.find_element(By.CSS_SELECTOR, 'tr[data-queue="root.batch"][data-dynamic]')
        assert "configured" in configured.text
        rows = browser.find_elements(By.CSS_SELECTOR, "#queue-placements tr[data-app]")
        assert len(rows) == len(APPS)
        refused = browser.find_element(By.CSS_SELECTOR, 'tr[data-app="gpu-job"]')
        assert "rejected" in refused.text and "unknown-partition" in refused.text
        assert browser.execute_script(OVERFLOWING, "main") == []
        assert console_errors(browser) == []
        _shot(browser, "queues")

        # the change under review, typed into the form over the config in force
        config = browser.find_element(By.ID, "config")
        assert "root.tenants" in config.get_attribute("value")
        config.clear()
        config.send_keys(NEXT_CONFIG_TEXT)
        browser.find_element(By.CSS_SELECTOR, 'form[action="/queues/what-if"] button').click()
        summary = wait.until(
            expected_conditions.visibility_of_element_located((By.ID, "queue-what-if-summary"))
        )
        assert summary.get_attribute("data-summary-moved") != "0"
        moved = browser.find_element(By.CSS_SELECTOR, 'tr[data-change-app="web-build-42"]')
        assert "root.tenants.web" in moved.text and "root.teams.web" in moved.text
        browser.execute_script("document.getElementById('queue-what-if-result').scrollIntoView()")
        assert browser.execute_script(OVERFLOWING, "main") == []
        assert console_errors(browser) == []
        _shot(browser, "queues-what-if")


async def test_a_user_sees_the_hub_disagree_on_the_placement_page_live(
    hub: ControlPlane,  # noqa: F811
    broker: str,
    topics: Topics,
    browser: Any,
) -> None:
    """Shadow mode on the real control plane: the page open on a placement shows fleetplace and
    OCM agreeing; OCM's stand-in plants a disagreement and a cluster changes on the hub (a record
    arrives): the agreement region is refreshed in place and names both clusters, with
    fleetplace's explanation of the tainted one OCM chose."""
    wait = WebDriverWait(browser, 30)

    def verdict() -> str:
        found = browser.find_elements(By.CSS_SELECTOR, "#agreement [data-verdict]")
        return str(found[0].get_attribute("data-verdict")) if found else ""

    async def until(what: str, check: Any) -> None:
        await asyncio.to_thread(wait.until, lambda _: check(), what)

    async with shadow_hub(hub, broker, topics) as shadow:
        names = shadow.names
        ocm_writes(hub, shadow.namespace, sorted(names[c] for c in ("c1", "c2", "c3")))
        async with Explorer(shadow.explorer_settings, port=0) as explorer:
            await explorer.wait_caught_up(60)
            await asyncio.to_thread(browser.get, f"{explorer.url}/placements/{shadow.key}")
            await until("the agreement", lambda: verdict() == "agreeing")
            assert console_errors(browser) == []

            ocm_writes(hub, shadow.namespace, sorted(names[c] for c in ("c1", "c2", "c9")))
            # a change on the hub reaches the topics, the page's live regions are fetched again
            hub.apply(
                {
                    "apiVersion": "cluster.open-cluster-management.io/v1",
                    "kind": "ManagedCluster",
                    "metadata": {"name": names["c1"], "labels": {"touched": "yes"}},
                },
                field_manager="a-user",
            )
            await until("the disagreement, live", lambda: verdict() == "disagreeing")
            rows = {
                str(row.get_attribute("data-cluster")): row.text
                for row in browser.find_elements(By.CSS_SELECTOR, "#agreement tr[data-cluster]")
            }
            assert set(rows) == {names["c3"], names["c9"]}
            assert "only fleetplace" in rows[names["c3"]]
            assert "only ocm" in rows[names["c9"]] and "filtered by TaintToleration" in rows[names["c9"]]
            assert browser.execute_script(OVERFLOWING, "#agreement") == []
            assert console_errors(browser) == []
            await asyncio.to_thread(_shot, browser, "placement-agreement")
