"""CEL selector of the Predicate filter: OCM's environment, the cluster view and the cost limits
(1,000,000 per expression, 10,000,000 per predicate and cluster)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.shared.placement import cel
from fleetplace.shared.placement.cel import (
    CelCompileError,
    cluster_cel_view,
    compile_cel,
    evaluate_predicate_cel,
)

Scores = dict[tuple[str, str], list[tuple[str, int]]]


def cluster(
    name: str = "cluster1",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    raw: dict[str, Any] = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": metadata,
    }
    if spec is not None:
        raw["spec"] = dict(spec)
    if status is not None:
        raw["status"] = dict(status)
    return raw


def lookup(scores: Scores | None = None) -> Callable[[str, str], Sequence[tuple[str, int]] | None]:
    table = scores or {}
    return lambda cluster_name, resource: table.get((cluster_name, resource))


def matches(
    expressions: str | Sequence[str],
    raw: Mapping[str, Any] | None = None,
    scores: Scores | None = None,
) -> bool:
    exprs = [expressions] if isinstance(expressions, str) else list(expressions)
    raw = raw if raw is not None else cluster()
    compiled = [compile_cel(e) for e in exprs]
    name = raw.get("metadata", {}).get("name", "")
    return evaluate_predicate_cel(compiled, cluster_cel_view(raw), name, lookup(scores))


# -- OCM's examples, from its tests and documentation --------------------------------------------


def test_label_expression_selects_by_region() -> None:
    expr = 'managedCluster.metadata.labels["region"] == "us-east-1"'
    assert matches(expr, cluster(labels={"region": "us-east-1"}))
    assert not matches(expr, cluster(labels={"region": "eu-west-1"}))


def test_label_expression_on_a_cluster_without_the_label_is_a_runtime_error_and_no_match() -> None:
    # a missing map key is a runtime error, not a compile error (cel-go checks declarations only)
    assert not matches('managedCluster.metadata.labels["region"] == "us-east-1"', cluster(labels={"a": "b"}))
    assert not matches('managedCluster.metadata.labels["region"] != "us-east-1"', cluster(labels={"a": "b"}))


def test_cluster_claims_exists() -> None:
    expr = 'managedCluster.status.clusterClaims.exists(c, c.name == "cloud" && c.value == "Amazon")'
    amazon = cluster(
        status={"clusterClaims": [{"name": "region", "value": "x"}, {"name": "cloud", "value": "Amazon"}]}
    )
    azure = cluster(status={"clusterClaims": [{"name": "cloud", "value": "Azure"}]})
    assert matches(expr, amazon)
    assert not matches(expr, azure)
    # no claims at all: clusterClaims is omitempty, so it is absent ⇒ error ⇒ no match
    assert not matches(expr, cluster())


@pytest.mark.parametrize(("value", "selected"), [(70, False), (90, True)])
def test_scores_filter_all_over_threshold(value: int, selected: bool) -> None:
    expr = "managedCluster.scores(\"test-addon\").filter(s, s.name == 'test-score').all(e, e.value > 80)"
    scores = {("cluster1", "test-addon"): [("other", 1), ("test-score", value)]}
    assert matches(expr, cluster(), scores) is selected


def test_e15_scores_demo_selects_only_the_90_cluster() -> None:
    expr = 'managedCluster.scores("demo").all(e, e.value > 80)'
    scores = {("c70", "demo"): [("s", 70)], ("c90", "demo"): [("s", 90)]}
    assert not matches(expr, cluster("c70"), scores)
    assert matches(expr, cluster("c90"), scores)


def test_scores_items_are_name_value_maps_with_int_values_in_stored_order() -> None:
    scores = {("cluster1", "cpu-memory"): [("memory", 4), ("cpu", 3)]}
    expr = (
        'managedCluster.scores("cpu-memory") == [{"name": "memory", "value": 4}, {"name": "cpu", "value": 3}]'
    )
    assert matches(expr, cluster(), scores)
    assert matches('type(managedCluster.scores("cpu-memory")[0].value) == int', cluster(), scores)
    # there is no quantity key despite the upstream doc comment
    assert not matches('has(managedCluster.scores("cpu-memory")[0].quantity)', cluster(), scores)
    assert matches('!has(managedCluster.scores("cpu-memory")[0].quantity)', cluster(), scores)


def test_scores_of_a_missing_object_is_an_error_and_no_match() -> None:
    assert not matches('managedCluster.scores("absent").size() == 0', cluster(), {})
    # even where the error would otherwise be irrelevant to the result shape
    assert not matches('managedCluster.scores("absent") == []', cluster(), {})


def test_scores_read_the_namespace_named_by_the_receiver() -> None:
    seen: list[tuple[str, str]] = []

    def recording(cluster_name: str, resource: str) -> Sequence[tuple[str, int]] | None:
        seen.append((cluster_name, resource))
        return [("s", 1)]

    compiled = [compile_cel('{"metadata": {"name": "elsewhere"}}.scores("demo").size() == 1')]
    assert evaluate_predicate_cel(compiled, cluster_cel_view(cluster("c1")), "c1", recording)
    assert seen == [("elsewhere", "demo")]


@pytest.mark.parametrize(
    ("version", "selected"),
    [("1.30.2", True), ("1.31.0", False), ("1.31.0-rc.1", True), ("1.28", False), ("v1.28.0", False)],
)
def test_semver_is_strict_base_version(version: str, selected: bool) -> None:
    expr = 'semver(managedCluster.metadata.labels["version"]).isLessThan(semver("1.31.0"))'
    assert matches(expr, cluster(labels={"version": version})) is selected


def test_semver_functions() -> None:
    assert matches('isSemver("1.2.3") && !isSemver("1.2") && !isSemver("v1.2.3") && !isSemver("01.2.3")')
    assert matches(
        'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3'
    )
    assert matches('semver("1.2.3").compareTo(semver("1.2.3+build")) == 0')
    assert matches('semver("1.10.0").isGreaterThan(semver("1.9.0"))')


# -- the typed-v1 view: omitempty and always-present keys ----------------------------------------------


def test_conditions_key_is_always_present_but_null_without_conditions() -> None:
    bare = cluster()
    assert matches("has(managedCluster.status.conditions)", bare)
    assert matches("managedCluster.status.conditions == null", bare)
    # iterating null is a runtime error ⇒ no match, whatever the predicate
    assert not matches("managedCluster.status.conditions.all(c, true)", bare)
    assert not matches("!managedCluster.status.conditions.exists(c, true)", bare)


def test_always_present_keys() -> None:
    view = cluster_cel_view(cluster(spec={"taints": [{"key": "k", "effect": "NoSelect"}]}))
    assert view["metadata"]["creationTimestamp"] is None
    assert view["spec"]["hubAcceptsClient"] is False
    assert view["status"]["version"] == {}
    assert view["spec"]["taints"] == [{"key": "k", "effect": "NoSelect", "timeAdded": None}]
    assert matches(
        "managedCluster.spec.hubAcceptsClient == false && managedCluster.status.version == {}"
        " && managedCluster.metadata.creationTimestamp == null && managedCluster.spec.taints[0].timeAdded == null",
        cluster(spec={"taints": [{"key": "k", "effect": "NoSelect"}]}),
    )


def test_omitempty_fields_are_absent_when_empty() -> None:
    raw = cluster(
        labels={},
        spec={"leaseDurationSeconds": 0, "taints": [{"key": "k", "value": "", "effect": "NoSelect"}]},
        status={"allocatable": {}, "capacity": {}, "clusterClaims": [], "version": {"kubernetes": ""}},
    )
    for expr in (
        "has(managedCluster.metadata.labels)",
        "has(managedCluster.metadata.annotations)",
        "has(managedCluster.spec.leaseDurationSeconds)",
        "has(managedCluster.spec.taints[0].value)",
        "has(managedCluster.status.allocatable)",
        "has(managedCluster.status.capacity)",
        "has(managedCluster.status.clusterClaims)",
        "has(managedCluster.status.version.kubernetes)",
    ):
        assert matches(f"!{expr}", raw), expr


def test_unknown_fields_are_dropped() -> None:
    raw = cluster(labels={"a": "b"})
    raw["metadata"]["extra"] = "x"
    raw["spec"] = {"hubAcceptsClient": True, "unknownSpecField": 1}
    raw["topLevel"] = {"x": 1}
    view = cluster_cel_view(raw)
    assert "extra" not in view["metadata"]
    assert view["spec"] == {"hubAcceptsClient": True}
    assert "topLevel" not in view
    assert matches("!has(managedCluster.spec.unknownSpecField)", raw)


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("2000m", "2"),
        ("1024Mi", "1Gi"),
        ("1500m", "1500m"),
        ("16Gi", "16Gi"),
        ("0.5Gi", "512Mi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Ki", "512"),
        ("1000k", "1M"),
        ("1e3", "1e3"),
        ("0", "0"),
        (4, "4"),
        (1.5, "1500m"),
        ("100M", "100M"),
    ],
)
def test_quantities_appear_canonical(written: str | float, canonical: str) -> None:
    raw = cluster(status={"allocatable": {"cpu": written}, "capacity": {"cpu": written}})
    assert cluster_cel_view(raw)["status"]["allocatable"]["cpu"] == canonical
    assert matches(f'managedCluster.status.capacity.cpu == "{canonical}"', raw)


def test_times_are_second_precision_utc() -> None:
    raw = cluster(
        spec={"taints": [{"key": "k", "effect": "NoSelect", "timeAdded": "2024-01-02T03:04:05.678+02:00"}]}
    )
    raw["metadata"]["creationTimestamp"] = "2024-05-06T07:08:09Z"
    assert matches('managedCluster.spec.taints[0].timeAdded == "2024-01-02T01:04:05Z"', raw)
    assert matches('managedCluster.metadata.creationTimestamp == "2024-05-06T07:08:09Z"', raw)
    assert matches(
        'timestamp(managedCluster.metadata.creationTimestamp) > timestamp("2024-01-01T00:00:00Z")', raw
    )


def test_integers_are_cel_int() -> None:
    raw = cluster(spec={"leaseDurationSeconds": 30})
    assert matches("managedCluster.spec.leaseDurationSeconds == 30", raw)
    assert matches("type(managedCluster.spec.leaseDurationSeconds) == int", raw)


def test_a_cluster_the_typed_decoding_rejects_matches_nothing() -> None:
    raw = cluster(labels={"a": "b"})
    raw["metadata"]["labels"] = {"a": 1}
    assert not matches("true", raw)
    bad_quantity = cluster(status={"allocatable": {"cpu": "two"}})
    assert not matches("true", bad_quantity)
    bad_time = cluster()
    bad_time["metadata"]["creationTimestamp"] = "yesterday"
    assert not matches("true", bad_time)


# -- evaluation semantics ------------------------------------------------------------------------


def test_all_expressions_are_anded_and_stop_at_the_first_not_true() -> None:
    calls: list[str] = []

    def recording(cluster_name: str, resource: str) -> Sequence[tuple[str, int]] | None:
        calls.append(resource)
        return [("s", 1)]

    view = cluster_cel_view(cluster(labels={"a": "b"}))
    first_false = [
        compile_cel('managedCluster.metadata.labels["a"] == "x"'),
        compile_cel('managedCluster.scores("r").size() == 1'),
    ]
    assert not evaluate_predicate_cel(first_false, view, "cluster1", recording)
    assert calls == []
    both_true = [
        compile_cel('managedCluster.metadata.labels["a"] == "b"'),
        compile_cel('managedCluster.scores("r").size() == 1'),
    ]
    assert evaluate_predicate_cel(both_true, view, "cluster1", recording)
    assert calls == ["r"]
    assert evaluate_predicate_cel([], view, "cluster1", recording)


@pytest.mark.parametrize(
    "expr",
    [
        "managedCluster.metadata.name",  # a string
        "1",
        "null",
        "[true]",
        "optional.of(true)",
        'managedCluster.metadata.labels[?"a"]',
    ],
)
def test_non_boolean_results_do_not_match(expr: str) -> None:
    assert not matches(expr, cluster(labels={"a": "b"}))


@pytest.mark.parametrize(
    "expr",
    [
        "1 / 0 == 1",
        "9223372036854775807 + 1 > 0",
        'int("x") == 1',
        '"{not json".parseJSON() == {}',
        "[1][5] == 1",
        'managedCluster.metadata.labels["missing"] == "x"',
        "managedCluster.metadata.name.startsWith(managedCluster.spec.hubAcceptsClient)",
        "optional.none().value() == 1",
        '"abc".charAt(10) == ""',
        '"abc".matches("(") ',
    ],
)
def test_runtime_errors_do_not_match(expr: str) -> None:
    assert not matches(expr, cluster(labels={"a": "b"}))


def test_errors_are_absorbed_by_logical_operators_like_cel() -> None:
    raw = cluster()
    assert matches('managedCluster.metadata.labels["x"] == "y" || true', raw)
    assert matches('true || managedCluster.metadata.labels["x"] == "y"', raw)
    assert not matches('false && managedCluster.metadata.labels["x"] == "y"', raw)
    assert matches('!(managedCluster.metadata.labels["x"] == "y" && false)', raw)
    assert not matches('managedCluster.metadata.labels["x"] == "y" && true', raw)
    # all/exists: a decisive element wins over an erroring one
    assert matches("[1, 0].exists(x, 1 / x == 1)")
    assert matches("![0, 2].all(x, 1 / x == 1)")
    assert not matches("[0, 1].all(x, 1 / x == 1)")


def test_parse_json_numbers_are_doubles_and_invalid_json_is_an_error() -> None:
    raw = cluster(
        annotations={"cfg": json.dumps({"replicas": 3, "zones": ["a", "b"], "on": True, "x": None})}
    )
    doc = 'managedCluster.metadata.annotations["cfg"].parseJSON()'
    assert matches(f"{doc}.replicas == 3.0 && type({doc}.replicas) == double", raw)
    assert matches(f'{doc}.zones.exists(z, z == "b") && {doc}.on && {doc}.x == null', raw)
    assert not matches(f"type({doc}.replicas) == int", raw)
    assert not matches('"[1,".parseJSON().size() == 1')


def test_heterogeneous_numeric_equality_and_ordering() -> None:
    assert matches("dyn(1) == 1.0 && dyn(1u) == 1 && 2 > 1.5 && 1u < 2")
    assert matches('dyn(1) != "1"')


def test_an_integer_meets_a_double_as_a_double_as_in_cel_go() -> None:
    # int64's maximum is not a double: it meets 2**63 as 2**63 (equal, not less)
    assert matches("dyn(9223372036854775807) == 9223372036854775808.0")
    assert not matches("dyn(9223372036854775807) < 9223372036854775808.0")
    # a double beyond the integer's range is simply greater or smaller
    assert matches("dyn(18446744073709551615u) < 18446744073709590000.0 && dyn(1u) > -1.0")
    assert not matches("dyn(1) == 0.0/0.0") and matches("dyn(1) != 0.0/0.0")


def test_macros() -> None:
    assert matches("[1, 2, 3].exists_one(x, x == 2)")
    assert not matches("[2, 2].exists_one(x, x == 2)")
    assert matches("[1, 2, 3].map(x, x * 2) == [2, 4, 6]")
    assert matches("[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]")
    assert matches("[1, 2, 3].filter(x, x % 2 == 1) == [1, 3]")
    assert matches('{"a": 1, "b": 2}.all(k, k in ["a", "b"])')
    assert matches("[[1, 2], [3]].all(l, l.all(x, x > 0))")


def test_optional_types() -> None:
    raw = cluster(labels={"env": "prod"})
    assert matches('managedCluster.metadata.?labels.?env.orValue("none") == "prod"', raw)
    assert matches('managedCluster.metadata.?labels.?team.orValue("none") == "none"', raw)
    assert matches('managedCluster.metadata.labels[?"team"].orValue("none") == "none"', raw)
    assert matches("!managedCluster.?status.?nothing.hasValue()", raw)
    assert matches("optional.none().or(optional.of(1)).value() == 1")
    assert matches('optional.ofNonZeroValue("").hasValue() == false')
    assert matches("[?optional.none(), ?optional.of(2), 3] == [2, 3]")
    assert matches('{?"a": optional.none(), "b": 1} == {"b": 1}')
    assert matches("optional.of(2).optMap(x, x * 2).value() == 4")
    assert matches(
        'managedCluster.?metadata.?labels.?env.optFlatMap(v, optional.of(v + "!")).value() == "prod!"', raw
    )


def test_strings_extension() -> None:
    for expr in (
        '"hello".charAt(1) == "e"',
        '"hello".indexOf("l") == 2 && "hello".indexOf("l", 3) == 3',
        '"hello".lastIndexOf("l") == 3 && "hello".lastIndexOf("l", 2) == 2',
        '"HeLLo".lowerAscii() == "hello" && "héllo".upperAscii() == "HéLLO"',
        '"a-b-c".replace("-", "+") == "a+b+c" && "a-b-c".replace("-", "+", 1) == "a+b-c"',
        '"a,b,c".split(",") == ["a", "b", "c"] && "a,b,c".split(",", 2) == ["a", "b,c"]',
        '"hello".substring(1) == "ello" && "hello".substring(1, 3) == "el"',
        '"  x \\t".trim() == "x"',
        '["a", "b"].join() == "ab" && ["a", "b"].join("-") == "a-b"',
        'strings.quote("a\\"b") == "\\"a\\\\\\"b\\""',
        '"abc".reverse() == "cba"',
        '"%s is %d years and %.2f%%".format(["x", 3, 1.5]) == "x is 3 years and 1.50%"',
        '"ünï".size() == 3 && "ünï".charAt(2) == "ï"',
    ):
        assert matches(expr), expr


def test_kubernetes_lists_and_regex() -> None:
    assert matches("[1, 2, 3].isSorted() && ![2, 1].isSorted()")
    assert matches("[1, 2, 3].sum() == 6 && [1.5, 2.5].sum() == 4.0 && [].sum() == 0")
    assert matches("[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3")
    assert not matches("[].min() == 0")
    assert matches("[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [1].indexOf(5) == -1")
    assert matches('"abc 123 def 456".find("[0-9]+") == "123"')
    assert matches('"abc 123 def 456".findAll("[0-9]+") == ["123", "456"]')
    assert matches('"abc 123 def 456".findAll("[0-9]+", 1) == ["123"]')
    assert matches('"abc".find("x") == ""')


def test_regular_expressions_use_re2_syntax() -> None:
    # cel-go compiles Go RE2: POSIX classes and \pL work, look-arounds are errors
    assert matches('"abc".matches("^[[:alpha:]]+$")')
    assert matches('"αβγ".matches("^\\\\pL+\\\\z")')
    assert not matches('"ab".matches("a(?=b)")')
    assert not matches('!"ab".matches("a(?=b)")')


def test_quantity_library() -> None:
    raw = cluster(status={"allocatable": {"cpu": "2000m", "memory": "1024Mi"}})
    assert matches(
        'quantity(managedCluster.status.allocatable.memory).isGreaterThan(quantity("1000Mi"))', raw
    )
    assert matches('quantity(managedCluster.status.allocatable.cpu).compareTo(quantity("2")) == 0', raw)
    assert matches('quantity("1").isLessThan(quantity("1001m")) && sign(quantity("-1")) == -1')
    assert matches(
        'quantity("1Ki").add(quantity("1Ki")).asInteger() == 2048 && sign(quantity("1").sub(1)) == 0'
    )
    assert matches('quantity("1500m").asApproximateFloat() == 1.5 && !quantity("1500m").isInteger()')
    assert matches('isQuantity("10Gi") && !isQuantity("10 Gi") && !isQuantity("1K")')
    assert not matches('quantity("1500m").asInteger() == 1')
    assert not matches('quantity("ten") == quantity("10")')


def test_url_and_ip_libraries() -> None:
    assert matches('url("https://user@example.com:8443/a%20b?x=1&x=2").getScheme() == "https"')
    assert matches('url("https://example.com:8443/p").getHost() == "example.com:8443"')
    assert matches(
        'url("https://[::1]:80/").getHostname() == "::1" && url("https://[::1]:80/").getPort() == "80"'
    )
    assert matches('url("https://e.com/p?x=1&x=2").getQuery() == {"x": ["1", "2"]}')
    assert matches('isURL("/just/a/path") && !isURL("not a url")')
    assert matches(
        'ip("10.1.2.3").family() == 4 && ip("::1").isLoopback() && ip("10.0.0.1").isGlobalUnicast()'
    )
    assert matches(
        'cidr("10.0.0.0/8").containsIP(ip("10.200.0.1")) && !cidr("10.0.0.0/8").containsIP("11.0.0.1")'
    )
    assert matches(
        'cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16") && cidr("10.1.2.3/8").masked() == cidr("10.0.0.0/8")'
    )
    assert matches(
        'cidr("192.168.1.0/24").prefixLength() == 24 && string(cidr("192.168.1.0/24").ip()) == "192.168.1.0"'
    )
    assert matches(
        'isIP("1.2.3.4") && !isIP("1.2.3") && !isIP("::ffff:1.2.3.4") && ip.isCanonical("1.2.3.4")'
    )


def test_dyn_values_defer_type_errors_to_run_time() -> None:
    # the same mistakes through dyn data compile (cel-go) and simply do not match
    raw = cluster(labels={"n": "1"})
    compile_cel('managedCluster.metadata.labels["n"] == 1')
    assert not matches('managedCluster.metadata.labels["n"] == 1', raw)
    assert matches('managedCluster.metadata.labels["n"] != 1', raw)
    assert not matches('managedCluster.metadata.labels["n"] > 0', raw)


def test_format_library() -> None:
    assert matches('!format.dns1123Label().validate("my-name").hasValue()')
    assert matches('format.dns1123Label().validate("My_Name").value().size() == 1')
    assert matches('format.named("labelValue").value().validate("ok") == optional.none()')
    assert matches('!format.named("nope").hasValue()')
    assert matches('!format.qualifiedName().validate("example.com/MyName").hasValue()')
    assert matches('format.dns1035Label().validate("1abc").hasValue()')


def test_standard_conversions_and_timestamps() -> None:
    assert matches('int("42") == 42 && uint(3) == 3u && double("1.5") == 1.5 && string(2.0) == "2"')
    assert matches('string(1e6) == "1e+06" && string(123456.0) == "123456" && bool("true")')
    assert matches('duration("1h30m") == duration("90m") && string(duration("1.5s")) == "1.5s"')
    assert matches('timestamp("2024-03-01T12:00:00Z").getFullYear() == 2024')
    assert matches('timestamp("2024-03-01T12:00:00Z").getMonth() == 2')
    assert matches('timestamp("2024-03-01T12:00:00Z").getHours("+02:00") == 14')
    assert matches('timestamp("2024-03-01T12:00:00Z") + duration("24h") == timestamp("2024-03-02T12:00:00Z")')
    assert matches('type(managedCluster) == map && type("") == string && type(null) == null_type')


# -- cost limits -------------------------------------------------------------------------------


def _big_list_cluster(n: int) -> dict[str, Any]:
    return cluster(annotations={"list": json.dumps(list(range(n)))})


def test_nested_comprehension_over_a_thousand_elements_runs_out_of_budget_quickly() -> None:
    # 1,000 × 1,000 inner steps would be true without a limit, but cost far more than 1,000,000
    expr = (
        'managedCluster.metadata.annotations["list"].parseJSON().all(x, '
        'managedCluster.metadata.annotations["list"].parseJSON().size() >= 0 && '
        'managedCluster.metadata.annotations["list"].parseJSON().all(y, y >= 0.0))'
    )
    raw = _big_list_cluster(1000)
    started = time.perf_counter()
    assert not matches(expr, raw)
    assert time.perf_counter() - started < 10.0
    # the same shape over a small list is well within budget and true
    assert matches(expr, _big_list_cluster(20))


def test_triple_nested_comprehension_over_a_literal_list_stops() -> None:
    items = ", ".join(str(i) for i in range(200))
    expr = f"[{items}].all(a, [{items}].all(b, [{items}].all(c, a + b + c >= 0)))"
    started = time.perf_counter()
    assert not matches(expr)
    assert time.perf_counter() - started < 10.0


def test_huge_string_results_are_charged_before_they_are_built() -> None:
    big = "a" * 100_000
    raw = cluster(annotations={"big": big})
    expr = 'managedCluster.metadata.annotations["big"].replace("a", managedCluster.metadata.annotations["big"]).size() > 0'
    started = time.perf_counter()
    assert not matches(expr, raw)
    assert time.perf_counter() - started < 5.0
    doubling = 'managedCluster.metadata.annotations["big"].split("").map(x, managedCluster.metadata.annotations["big"] + x).size() > 0'
    assert not matches(doubling, raw)


def test_predicate_budget_is_shared_by_its_expressions(monkeypatch: pytest.MonkeyPatch) -> None:
    expr = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, x > 0)"
    assert matches([expr])
    cost_of_one = _cost(expr)
    monkeypatch.setattr(cel, "PREDICATE_COST_BUDGET", cost_of_one * 2 + cost_of_one // 2)
    assert matches([expr, expr])
    assert not matches([expr, expr, expr])


def test_per_expression_limit_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    expr = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, x > 0)"
    cost = _cost(expr)
    monkeypatch.setattr(cel, "EXPRESSION_COST_LIMIT", cost)
    assert matches(expr)
    monkeypatch.setattr(cel, "EXPRESSION_COST_LIMIT", cost - 1)
    assert not matches(expr)


def _cost(expr: str) -> int:
    """Smallest per-expression limit under which ``expr`` still matches (binary search)."""
    low, high = 1, 10_000
    while low < high:
        mid = (low + high) // 2
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(cel, "EXPRESSION_COST_LIMIT", mid)
            ok = matches(expr)
        if ok:
            high = mid
        else:
            low = mid + 1
    return low


# -- compile errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "invalid.expression",
        "xxxx.expression",
        "managedCluster.metadata.labels[",
        "1 +",
        "size(1)",
        '1 == "a"',
        "1 == 1.0",
        '"a" + 1',
        "managedCluster.noSuchFunction()",
        "noSuchFunction(1)",
        "[1].all(1, true)",
        "Foo{a: 1}",
        "has(managedCluster)",
        "let x = 1",
        '"unterminated',
        "true ? 1 : 'a'",
        '[1, 2].exists(x, x == "a")',
        '{"a": 1}.all(k, k == 1)',
        "[1, 2, 3][1u] == 2",
        '1 in ["a"]',
        '[1] + ["a"] == [1]',
        'optional.of(1).value() == "a"',
        '"x".matches(1)',
        "[1, 2].all(x, x)",
        'format.nosuchformat().validate("x")',
    ],
)
def test_compile_errors_start_with_compilation_failed(expr: str) -> None:
    with pytest.raises(CelCompileError) as excinfo:
        compile_cel(expr)
    assert str(excinfo.value).startswith("compilation failed: ERROR: <input>:1:")


def test_undeclared_reference_message_points_at_the_identifier() -> None:
    with pytest.raises(CelCompileError) as excinfo:
        compile_cel("xxxx.expression")
    assert str(excinfo.value).splitlines()[0] == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'xxxx' (in container '')"
    )


def test_every_check_problem_is_reported_in_source_order_at_cel_go_positions() -> None:
    with pytest.raises(CelCompileError) as excinfo:
        compile_cel("size(1) + managedCluster.undefinedFn() + y")
    lines = [line for line in str(excinfo.value).splitlines() if "ERROR:" in line]
    assert lines == [
        "compilation failed: ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'",
        "ERROR: <input>:1:37: undeclared reference to 'undefinedFn' (in container '')",
        "ERROR: <input>:1:42: undeclared reference to 'y' (in container '')",
    ]


def test_expression_size_is_limited_at_compile_time() -> None:
    with pytest.raises(CelCompileError, match="code point size exceeds limit"):
        compile_cel("1 + " * 25_000 + "1 == 1")


def test_deeply_nested_expression_is_a_compile_error_not_a_crash() -> None:
    with pytest.raises(CelCompileError):
        compile_cel("(" * 300 + "true" + ")" * 300)


_FRAGMENTS = st.sampled_from(
    [
        "managedCluster",
        ".metadata",
        ".labels",
        '["a"]',
        ".?x",
        "[?0]",
        ".all(x, ",
        ".map(x, ",
        "x",
        ")",
        "(",
        "[",
        "]",
        "{",
        "}",
        ":",
        ",",
        "1",
        "2u",
        "1.5",
        '"s"',
        "null",
        "true",
        " && ",
        " || ",
        " == ",
        " + ",
        " / ",
        "!",
        "-",
        "?",
        ".size()",
        "has(",
        'quantity("1")',
        ".parseJSON()",
        '.scores("r")',
        " in ",
        "'",
        '"',
        "\\",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_FRAGMENTS | st.text(max_size=3), max_size=12).map("".join))
def test_arbitrary_text_either_compiles_or_raises_cel_compile_error(source: str) -> None:
    try:
        compiled = compile_cel(source)
    except CelCompileError as e:
        assert str(e).startswith(("compilation failed: ", "instantiation failed: "))
        return
    view = cluster_cel_view(cluster(labels={"a": "b"}, annotations={"j": "[1]"}))
    result = evaluate_predicate_cel([compiled], view, "cluster1", lookup({("cluster1", "r"): [("s", 1)]}))
    assert isinstance(result, bool)


def test_compiled_expression_is_reusable_and_hashable_by_identity() -> None:
    a = compile_cel('managedCluster.metadata.labels["region"] == "us-east-1"')
    b = compile_cel('managedCluster.metadata.labels["region"] == "us-east-1"')
    assert a.source == b.source
    assert a != b and len({a, b, a}) == 2
    east = cluster_cel_view(cluster(labels={"region": "us-east-1"}))
    west = cluster_cel_view(cluster(labels={"region": "us-west-1"}))
    assert evaluate_predicate_cel([a], east, "cluster1", lookup())
    assert not evaluate_predicate_cel([a], west, "cluster1", lookup())
    assert evaluate_predicate_cel([a], east, "cluster1", lookup())


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        # Kubernetes declares sign as a global function only
        (
            'quantity("1").sign() == 1',
            "1:19: found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'",
        ),
        ('"1".quantity()', "1:13: found no matching overload for 'quantity' applied to 'string.()'"),
        ('"1.0.0".semver()', "1:15: found no matching overload for 'semver' applied to 'string.()'"),
        # the comparisons are receiver-style only
        (
            'isGreaterThan(quantity("1"), quantity("2"))',
            "1:14: found no matching overload for 'isGreaterThan' applied to"
            " '(kubernetes.Quantity, kubernetes.Quantity)'",
        ),
        (
            'quantity("1").isGreaterThan(1)',
            "1:28: found no matching overload for 'isGreaterThan' applied to 'kubernetes.Quantity.(int)'",
        ),
        (
            'quantity("1").add(1.5)',
            "1:18: found no matching overload for 'add' applied to 'kubernetes.Quantity.(double)'",
        ),
        # mul and div came after the Kubernetes version OCM vendors
        ('quantity("1").mul(2)', "1:18: undeclared reference to 'mul' (in container '')"),
        ('quantity("4").div(2)', "1:18: undeclared reference to 'div' (in container '')"),
        ('"a".startsWith(1)', "1:15: found no matching overload for 'startsWith' applied to 'string.(int)'"),
        # the Lists library is declared per element type
        ('["a"].sum() == "a"', "1:10: found no matching overload for 'sum' applied to 'list(string).()'"),
        ("[[1]].min() == [1]", "1:10: found no matching overload for 'min' applied to 'list(list(int)).()'"),
        (
            '[1, 2].indexOf("a") == -1',
            "1:15: found no matching overload for 'indexOf' applied to 'list(int).(string)'",
        ),
        ("[1].max() + 1.0 > 0.0", "1:11: found no matching overload for '_+_' applied to '(int, double)'"),
    ],
)
def test_forms_the_declarations_reject_are_compile_errors(expr: str, message: str) -> None:
    with pytest.raises(CelCompileError) as excinfo:
        compile_cel(expr)
    assert str(excinfo.value).splitlines()[0] == f"compilation failed: ERROR: <input>:{message}"


def test_list_functions_accept_dyn_elements_and_type_their_results() -> None:
    raw = cluster(labels={"zone": "b", "region": "a"})
    labels = "managedCluster.metadata.labels"
    assert matches(f"![{labels}.zone, {labels}.region].isSorted() && [{labels}.region].min() == 'a'", raw)
    assert matches('[1, "a"].indexOf("a") == 1 && [1.5, 2.5].max() + 1.0 == 3.5')
    assert matches('[duration("1s"), duration("2s")].sum() == duration("3s")')


def test_quantity_sign_is_a_global_function() -> None:
    assert matches('sign(quantity("1500m")) == 1 && sign(quantity("0")) == 0')
    assert matches(
        "sign(quantity(managedCluster.status.allocatable.cpu)) == 1",
        cluster(status={"allocatable": {"cpu": "2"}}),
    )


def test_reserved_words_are_field_names_but_not_identifiers() -> None:
    raw = cluster(labels={"if": "yes", "package": "core"})
    assert matches('managedCluster.metadata.labels.if == "yes"', raw)
    assert matches("{'while': 1}.while == 1 && has(managedCluster.metadata.labels.package)", raw)
    with pytest.raises(CelCompileError, match="reserved identifier: if"):
        compile_cel("if == 1")
    with pytest.raises(CelCompileError, match="undeclared reference to 'while'"):
        compile_cel('"a".while()')
