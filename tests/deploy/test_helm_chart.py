"""The chart (compose/helm/fleetplace) lints and renders over its values matrix (ci/*-values.yaml),
and what it renders is restricted Pod Security, least-privilege Kafka and hub access, and the
topic catalogue as `fleetplace topics create` makes it. helm comes from the Go module proxy
(`make helm`); the same objects go to a real API server in test_helm_dryrun.py."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetplace.services import kafka_access
from fleetplace.services.hub import access as hub_access
from fleetplace.services.hub import rbac as hub_rbac
from fleetplace.services.hub.kinds import HUB_KINDS
from tests.deploy import chart
from tests.deploy.chart import MATRIX, RenderError, of_kind, render

WORKERS = ("scheduler", "queues", "rollout", "scores", "hub")


@pytest.fixture(scope="module", autouse=True)
def _helm() -> Iterator[None]:
    chart.build_helm()
    yield


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {name: render([name]) for name in MATRIX}


def test_the_matrix_covers_strimzi_scram_tls_every_option_and_both_hub_modes() -> None:
    assert set(MATRIX) >= {
        "defaults-values.yaml",
        "strimzi-tls-values.yaml",
        "strimzi-scram-values.yaml",
        "scram-values.yaml",
        "tls-values.yaml",
        "all-optional-values.yaml",
        "hub-shadow-values.yaml",
        "hub-replace-values.yaml",
    }


@pytest.mark.parametrize("values", MATRIX)
def test_helm_lint_passes(values: str) -> None:
    done = chart.helm(
        "lint", "--strict", str(chart.CHART), "-f", str(chart.CHART / "ci" / values), check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("values", MATRIX)
def test_every_pod_meets_restricted_pod_security(
    values: str, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    pods = [o for o in rendered[values] if chart.pod_spec(o) is not None]
    assert pods
    assert [v for o in pods for v in chart.restricted_violations(o)] == []


def test_the_restricted_check_catches_each_broken_rule(rendered: dict[str, list[dict[str, Any]]]) -> None:
    (deployment,) = (
        o
        for o in of_kind(rendered["defaults-values.yaml"], "Deployment")
        if chart.component(o) == "scheduler"
    )
    breaks = {
        "privilege escalation": lambda c, p: c.__setitem__("allowPrivilegeEscalation", True),
        "capabilities kept": lambda c, p: c["capabilities"].__setitem__("drop", ["NET_RAW"]),
        "root": lambda c, p: (c.pop("runAsNonRoot"), p.pop("runAsNonRoot")),
        "no seccomp": lambda c, p: (c.pop("seccompProfile"), p.pop("seccompProfile")),
        "privileged": lambda c, p: c.__setitem__("privileged", True),
    }
    for what, do in breaks.items():
        broken = copy.deepcopy(deployment)
        spec = broken["spec"]["template"]["spec"]
        do(spec["containers"][0]["securityContext"], spec["securityContext"])
        assert chart.restricted_violations(broken), what


@pytest.mark.parametrize("values", MATRIX)
def test_deployments_probe_readiness_and_fit_the_sigterm_stop(
    values: str, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    for deployment in of_kind(rendered[values], "Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["startupProbe"]["httpGet"]["path"] == "/readyz"
        # group consumer 10 s + leave 5 s + reader 10 s + producer 10 s (docs/deployment.md)
        assert spec["terminationGracePeriodSeconds"] >= 35
        assert container["resources"]["requests"]["memory"] and container["resources"]["limits"]["memory"]
        assert spec["securityContext"]["runAsUser"] == 10001
        assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_no_secret_is_rendered_from_values_and_secrets_are_refused_in_config(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for objects in rendered.values():
        assert of_kind(objects, "Secret") == []
    with pytest.raises(RenderError, match=r"/config/FLEETPLACE_DEBUG_TOKEN"):
        render(["defaults-values.yaml"], ["config.FLEETPLACE_DEBUG_TOKEN=s3cret"])
    with pytest.raises(RenderError, match=r"additional properties 'saslPassword' not allowed"):
        render(["defaults-values.yaml"], ["kafka.saslPassword=s3cret"])


def test_without_a_bootstrap_address_the_chart_says_which_value_is_missing() -> None:
    with pytest.raises(RenderError, match=r"kafka\.bootstrapServers"):
        render()


@pytest.mark.parametrize(
    "values", ["strimzi-tls-values.yaml", "strimzi-scram-values.yaml", "all-optional-values.yaml"]
)
def test_each_workers_kafka_user_grants_exactly_what_it_uses(
    values: str, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    config = {k: str(v) for k, v in (chart.values_of(values).get("config") or {}).items()}
    config["KAFKA_TRANSACTIONS"] = chart.values_of(values)["kafka"].get("transactions", "auto")
    users = {chart.component(u): u for u in of_kind(rendered[values], "KafkaUser")}
    deployed = {chart.component(d) for d in of_kind(rendered[values], "Deployment")}
    assert deployed <= set(users)
    for worker in deployed:
        given_acls = chart.granted(users[worker], "fleetplace.")
        assert chart.acl_differences(chart.needed_acls(worker, config), given_acls) == [], worker


def test_a_dropped_acl_is_named_as_missing(rendered: dict[str, list[dict[str, Any]]]) -> None:
    (user,) = (
        u
        for u in of_kind(rendered["strimzi-tls-values.yaml"], "KafkaUser")
        if chart.component(u) == "scheduler"
    )
    broken = copy.deepcopy(user)
    broken["spec"]["authorization"]["acls"] = [
        a for a in broken["spec"]["authorization"]["acls"] if a["resource"]["name"] != "fleetplace.placements"
    ]
    differences = chart.acl_differences(
        chart.needed_acls("scheduler", {}), chart.granted(broken, "fleetplace.")
    )
    assert differences == ["topic placements: missing ['Describe', 'Read']"]


def test_sigmc_slices_are_writable_only_when_the_scheduler_writes_them(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    def scheduler_grants(values: str) -> dict[tuple[str, str], frozenset[str]]:
        (user,) = (u for u in of_kind(rendered[values], "KafkaUser") if chart.component(u) == "scheduler")
        return chart.granted(user, "fleetplace.")

    assert ("topic", "sigmc-placement-decisions") not in scheduler_grants("strimzi-tls-values.yaml")
    assert scheduler_grants("all-optional-values.yaml")[("topic", "sigmc-placement-decisions")] == {
        "Write",
        "Describe",
    }


def test_the_strimzi_workers_mount_the_secrets_strimzi_creates(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for values, protocol in (("strimzi-tls-values.yaml", "SSL"), ("strimzi-scram-values.yaml", "SASL_SSL")):
        cluster = chart.values_of(values)["kafka"]["strimzi"]["cluster"]
        users = {u["metadata"]["name"] for u in of_kind(rendered[values], "KafkaUser")}
        for deployment in of_kind(rendered[values], "Deployment"):
            spec = deployment["spec"]["template"]["spec"]
            env = {e["name"]: e for e in spec["containers"][0]["env"]}
            assert env["KAFKA_SECURITY_PROTOCOL"]["value"] == protocol
            assert env["KAFKA_BOOTSTRAP_SERVERS"]["value"] == f"{cluster}-kafka-bootstrap:9093"
            secrets = {v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v}
            assert f"{cluster}-cluster-ca-cert" in secrets
            if protocol == "SSL":
                assert secrets & users, deployment["metadata"]["name"]
            else:
                assert env["KAFKA_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] in users


@pytest.mark.parametrize("values", ["strimzi-tls-values.yaml", "all-optional-values.yaml"])
def test_kafka_topics_are_the_catalogue_as_topics_create_makes_it(
    values: str, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    topics_values = chart.values_of(values)["topics"]
    topics = {t["spec"]["topicName"]: t["spec"] for t in of_kind(rendered[values], "KafkaTopic")}
    catalogue = kafka_access.topics_json()
    assert set(topics) == {f"fleetplace.{name}" for name in catalogue}
    for name, spec in catalogue.items():
        got = topics[f"fleetplace.{name}"]
        expected = topics_values["workPartitions"] if spec["partitioned"] else spec["partitions"]
        assert got["partitions"] == expected, name
        assert got["config"] == spec["config"], name
        assert got["replicas"] == 3


def test_the_topics_job_runs_topics_create_before_install_and_upgrade(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    (job,) = of_kind(rendered["defaults-values.yaml"], "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["topics", "create", "--partitions", "12", "--replication-factor", "3"]
    assert of_kind(rendered["strimzi-tls-values.yaml"], "Job") == []


def test_the_scheduler_scales_on_its_lag_never_past_the_partitions(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    (scaled,) = of_kind(rendered["all-optional-values.yaml"], "ScaledObject")
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    assert trigger["metadata"]["topic"] == "fleetplace.placements"
    assert trigger["metadata"]["consumerGroup"] == "fleetplace-scheduler"
    assert scaled["spec"]["maxReplicaCount"] == 6  # keda.maxReplicas 24, capped at topics.workPartitions
    (scheduler,) = (
        d
        for d in of_kind(rendered["all-optional-values.yaml"], "Deployment")
        if chart.component(d) == "scheduler"
    )
    assert "replicas" not in scheduler["spec"]  # KEDA owns it


def test_consumer_group_workers_have_a_pdb_and_spread(rendered: dict[str, list[dict[str, Any]]]) -> None:
    objects = rendered["all-optional-values.yaml"]
    budgets = {chart.component(p) for p in of_kind(objects, "PodDisruptionBudget")}
    assert budgets == {"scheduler", "queues", "rollout", "scores"}
    for deployment in of_kind(objects, "Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        if chart.component(deployment) == "hub":
            assert deployment["spec"]["strategy"]["type"] == "Recreate"
            continue
        assert spec["topologySpreadConstraints"] and spec["affinity"]["podAntiAffinity"]


# What the bridge lists and watches: the kinds it publishes, as its start-up check asks.
HUB_READS = {(k.group, k.plural) for k in HUB_KINDS}
WRITE = {"create", "update", "delete"}


def _rules(objects: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    (role,) = of_kind(objects, "ClusterRole")
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


@pytest.mark.parametrize("mode", ["shadow", "replace"])
def test_the_hub_bridge_may_write_only_its_modes_decisions(
    mode: str, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    rules = _rules(rendered[f"hub-{mode}-values.yaml"])
    for key in HUB_READS:
        # the write-back also gets the Placement it compares with or owns
        wanted = {"list", "watch"} | ({"get"} if key[1] == "placements" else set())
        assert rules.pop(key) == wanted, key
    sigmc = ("multicluster.x-k8s.io", "placementdecisions")
    ocm = ("cluster.open-cluster-management.io", "placementdecisions")
    if mode == "shadow":
        assert rules == {sigmc: {"get", "list", "watch"} | WRITE, ocm: {"get", "list", "watch"}}
    else:
        assert rules == {
            ocm: {"get", "list", "watch"} | WRITE,
            ("cluster.open-cluster-management.io", "placementdecisions/status"): {"update"},
            ("cluster.open-cluster-management.io", "placements/status"): {"update"},
            ("cluster.open-cluster-management.io", "placements/finalizers"): {"update"},
        }
    (binding,) = of_kind(rendered[f"hub-{mode}-values.yaml"], "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "fp-fleetplace-hub", "namespace": "fleet"}
    ]
    (role,) = of_kind(rendered[f"hub-{mode}-values.yaml"], "Role")
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]


def _granted_permissions(objects: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(verb, group, resource, namespace) of the bridge's ClusterRole (namespace empty) and Role."""
    out = set()
    for role in of_kind(objects, "ClusterRole") + of_kind(objects, "Role"):
        namespace = chart.NAMESPACE if role["kind"] == "Role" else ""
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    out.update((verb, group, resource, namespace) for verb in rule["verbs"])
    return out


@pytest.mark.parametrize("mode", ["shadow", "replace"])
def test_the_hub_bridge_is_granted_every_permission_its_start_up_check_asks_for(
    mode: str, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    """The bridge refuses to start without one of them (services/hub/access.py)."""
    granted = _granted_permissions(rendered[f"hub-{mode}-values.yaml"])
    wanted = {(p.verb, p.group, p.resource, p.namespace) for p in hub_access.reading(chart.NAMESPACE)}
    assert wanted - granted == set()
    # reading the hub takes nothing beyond what the check asks for (and the write-back's own table)
    writes = {(p.verb, p.group, p.resource, "") for p in hub_rbac.permissions(hub_rbac.Mode(mode))}
    reads = {g for g in granted if g[2] in {k.plural for k in HUB_KINDS} | {"leases"}} - writes
    assert reads == wanted


@pytest.mark.parametrize("mode", ["shadow", "replace"])
def test_the_hub_bridges_roles_are_the_write_back_table_where_it_exists(
    mode: str, rendered: dict[str, list[dict[str, Any]]]
) -> None:
    """The chart grants exactly what the bridge's two start-up checks ask for: reading the hub and
    its Lease (services/hub/access.py) and the mode's write-back table (services/hub/rbac.py)."""
    granted = _granted_permissions(rendered[f"hub-{mode}-values.yaml"])
    reading = {(p.verb, p.group, p.resource, p.namespace) for p in hub_access.reading(chart.NAMESPACE)}
    writing = {(p.verb, p.group, p.resource, "") for p in hub_rbac.permissions(hub_rbac.Mode(mode))}
    assert granted == reading | writing


def test_only_the_hub_bridge_gets_a_kubernetes_token(rendered: dict[str, list[dict[str, Any]]]) -> None:
    for deployment in of_kind(rendered["all-optional-values.yaml"], "Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        assert spec["automountServiceAccountToken"] is (chart.component(deployment) == "hub")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prefix=st.from_regex(r"[a-z][a-z0-9]{0,8}\.", fullmatch=True),
    partitions=st.integers(min_value=1, max_value=64),
)
def test_any_prefix_and_partition_count_keeps_acls_and_topics_exact(prefix: str, partitions: int) -> None:
    objects = render(
        ["strimzi-tls-values.yaml"], [f"topicPrefix={prefix}", f"topics.workPartitions={partitions}"]
    )
    for user in of_kind(objects, "KafkaUser"):
        assert (
            chart.acl_differences(chart.needed_acls(chart.component(user), {}), chart.granted(user, prefix))
            == []
        )
    for topic in of_kind(objects, "KafkaTopic"):
        name = topic["spec"]["topicName"][len(prefix) :]
        spec = kafka_access.topics_json()[name]
        assert topic["spec"]["partitions"] == (partitions if spec["partitioned"] else spec["partitions"])


def test_the_topics_jobs_kafka_user_may_only_list_and_create_the_catalogue(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    (user,) = (
        u
        for u in of_kind(rendered["strimzi-scram-values.yaml"], "KafkaUser")
        if chart.component(u) == "topics"
    )
    assert user["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    needed = {("topic", name): frozenset({"Create", "Describe"}) for name in kafka_access.topics_json()}
    assert chart.acl_differences(needed, chart.granted(user, "fleetplace.")) == []
    (job,) = of_kind(rendered["strimzi-scram-values.yaml"], "Job")
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["KAFKA_SASL_USERNAME"]["value"] == user["metadata"]["name"]


def test_transactional_ids_are_granted_by_group_prefix_unless_transactions_are_off() -> None:
    def transactional(sets: list[str]) -> dict[str, frozenset[str]]:
        users = of_kind(render(["strimzi-tls-values.yaml"], sets), "KafkaUser")
        return {
            chart.component(u): ops
            for u in users
            for (kind, _), ops in chart.granted(u, "fleetplace.").items()
            if kind == "transactionalId"
        }

    on = {
        chart.component(u): name
        for u in of_kind(render(["strimzi-tls-values.yaml"]), "KafkaUser")
        for (kind, name) in chart.granted(u, "fleetplace.")
        if kind == "transactionalId"
    }
    assert on == {
        "scheduler": "fleetplace-scheduler.*",
        "queues": "fleetplace-queue-placer.*",
        "rollout": "fleetplace-rollout.*",
    }
    assert set(transactional([])) == set(on)
    assert transactional(["kafka.transactions=false"]) == {}


@pytest.mark.parametrize(
    ("sets", "field"),
    [
        (["workers.hub.replicas=2"], "/workers/hub/replicas"),
        (["workers.hub.mode=takeover"], "/workers/hub/mode"),
        (["topics.mode=zookeeper"], "/topics/mode"),
        (["topics.workPartitions=0"], "/topics/workPartitions"),
        (["kafka.strimzi.authentication=plain"], "/kafka/strimzi/authentication"),
        (["terminationGracePeriodSeconds=10"], "/terminationGracePeriodSeconds"),
        # only FLEETPLACE_* settings in config: the Kafka ones (and their secrets) are the chart's
        (["config.KAFKA_SASL_PASSWORD=x"], "'KAFKA_SASL_PASSWORD' does not match pattern"),
    ],
)
def test_the_schema_refuses_a_bad_value_naming_its_field(sets: list[str], field: str) -> None:
    expected = field if field.startswith("'") else f"at '{field}'"
    with pytest.raises(RenderError, match=re.escape(expected)):
        render(["defaults-values.yaml"], sets)
