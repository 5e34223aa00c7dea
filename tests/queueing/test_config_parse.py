"""Decoding YAML/JSON strictly, the way YuniKorn's Go decoder does."""

from __future__ import annotations

import pytest

from fleetplace.shared.queueing import ConfigError, QueuePlacer, parse_config
from tests.queueing.helpers import app, config, partition, problem_paths, problems_of


def test_yaml_and_json_documents_give_the_same_placements() -> None:
    yaml_text = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
    placementrules:
      - name: user
        create: true
"""
    json_text = '{"partitions": [{"name": "default", "queues": [{"name": "root", "submitacl": "*"}],\n\t"placementrules": [{"name": "user", "create": true}]}]}'
    for text in (yaml_text, json_text, json_text.encode()):
        outcome = QueuePlacer(parse_config(text)).place(app("bob"))
        assert (outcome.queue, outcome.rule, outcome.created) == ("root.bob", "user", True)


def test_yaml_flow_mapping_that_is_not_json_still_parses() -> None:
    text = "{partitions: [{name: default, queues: [{name: root, submitacl: '*'}]}]}"
    assert set(parse_config(text).partitions) == {"default"}


def test_unknown_key_anywhere_is_an_error_with_its_path() -> None:
    cfg = config(partition([{"name": "a", "maxapps": 3}], [{"name": "user", "creat": True}]))
    cfg["partitions"][0]["extra"] = 1
    paths = problem_paths(cfg)
    assert sorted(paths) == [
        "partitions[0].extra",
        "partitions[0].placementrules[0].creat",
        "partitions[0].queues[0].queues[0].maxapps",
    ]


def test_keys_are_case_sensitive_like_go_yaml() -> None:
    cfg = config(partition())
    cfg["partitions"][0]["placementRules"] = [{"name": "user"}]
    assert problem_paths(cfg) == ["partitions[0].placementRules"]


@pytest.mark.parametrize("value", ["true", "True", "1", 1])
def test_create_must_be_a_boolean_not_a_string_or_number(value: object) -> None:
    problems = problems_of(config(partition(rules=[{"name": "user", "create": value}])))
    assert [p.path for p in problems] == ["partitions[0].placementrules[0].create"]
    assert "boolean" in problems[0].reason


def test_yaml_words_go_accepts_for_a_typed_bool_are_booleans() -> None:
    # go-yaml v3 still reads yes/no/on/off/y/n into a bool field
    text = """
partitions:
  - queues: [{name: root, submitacl: '*', queues: [{name: p, parent: yes}]}]
    placementrules: [{name: user, create: on, parent: {name: fixed, value: p, create: n}}]
"""
    assert QueuePlacer(parse_config(text)).place(app("bob")).queue == "root.p.bob"


def test_parent_written_as_a_list_is_a_parse_error() -> None:
    rule = {"name": "user", "create": True, "parent": [{"name": "fixed", "value": "root.x"}]}
    problems = problems_of(config(partition(rules=[rule])))
    assert [p.path for p in problems] == ["partitions[0].placementrules[0].parent"]
    assert "not a list" in problems[0].reason


def test_filter_users_as_a_bare_string_is_a_parse_error() -> None:
    rule = {"name": "user", "filter": {"type": "allow", "users": "alice"}}
    assert problem_paths(config(partition(rules=[rule]))) == ["partitions[0].placementrules[0].filter.users"]


def test_a_number_in_a_string_field_keeps_its_source_text() -> None:
    # go-yaml fills a string field with the scalar's text: `name: 1234` is the rule name "1234"
    text = "partitions: [{queues: [{name: root}], placementrules: [{name: 1234}]}]"
    problems = problems_of(text)
    assert [p.path for p in problems] == ["partitions[0].placementrules[0].name"]
    assert "'1234'" in problems[0].reason


def test_yaml_octal_looking_queue_name_keeps_its_text() -> None:
    text = "partitions: [{queues: [{name: root, submitacl: '*', queues: [{name: 0777}]}], placementrules: [{name: provided}]}]"
    outcome = QueuePlacer(parse_config(text)).place(app(queue="0777"))
    assert outcome.queue == "root.0777"


def test_null_values_are_go_zero_values() -> None:
    text = """
partitions:
  - name: ~
    queues:
      - name: root
        submitacl: '*'
        adminacl: ~
        queues: ~
    placementrules:
      - name: user
        create: ~
        filter: ~
        parent: ~
"""
    cfg = parse_config(text)
    assert set(cfg.partitions) == {"default"}
    # create: null is false, so the user queue must exist
    assert QueuePlacer(cfg).place(app("bob")).rejected


def test_duplicate_key_is_an_error_naming_the_key() -> None:
    text = """
partitions:
  - name: default
    queues:
      - name: root
        name: other
"""
    problems = problems_of(text)
    assert [p.path for p in problems] == ["partitions[0].queues[0].name"]
    assert "duplicate key" in problems[0].reason


def test_duplicate_key_in_json_is_an_error() -> None:
    problems = problems_of('{"partitions": [], "partitions": []}')
    assert "duplicate key 'partitions'" in problems[0].reason


def test_broken_yaml_reports_line_and_column() -> None:
    problems = problems_of("partitions:\n  - name: [unclosed\n")
    assert problems[0].path == ""
    assert "line" in problems[0].reason


def test_yaml_merge_keys_are_expanded() -> None:
    text = """
base: &rule {name: user, create: true}
"""
    # `base` is not a config key: merge keys work, unknown keys still fail
    assert problem_paths(text) == ["base"]
    text = """
partitions:
  - queues: [{name: root, submitacl: '*'}]
    placementrules:
      - &user {name: user, create: false}
      - <<: *user
        create: true
"""
    assert QueuePlacer(parse_config(text)).place(app("zed")).queue == "root.zed"


def test_every_problem_is_reported_not_only_the_first() -> None:
    cfg = config(
        partition(
            [{"name": "bad.name"}, {"name": "ok", "submitacl": "a b c"}],
            [{"name": "1234"}, {"name": "fixed"}, {"name": "tag"}],
        ),
        {"name": "DEFAULT", "queues": None},
    )
    assert sorted(problem_paths(cfg)) == [
        "partitions[0].placementrules[0].name",
        "partitions[0].placementrules[1].value",
        "partitions[0].placementrules[2].value",
        "partitions[0].queues[0].queues[0].name",
        "partitions[0].queues[0].queues[1].submitacl",
        "partitions[1].name",
        "partitions[1].queues",
    ]


def test_config_error_message_lists_each_problem_with_its_path() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(config(partition(rules=[{"name": "tag"}])))
    text = str(caught.value)
    assert "1 problem" in text
    assert "partitions[0].placementrules[0].value:" in text


def test_empty_document_means_the_default_configuration() -> None:
    # the default config: partition default, root open to everybody, tag rule on namespace with create
    for source in ("", "   \n", None, b""):
        placer = QueuePlacer(parse_config(source))
        outcome = placer.place(app("bob", tags={"namespace": "team-a"}))
        assert (outcome.queue, outcome.rule, outcome.created) == ("root.team-a", "tag", True)


def test_placer_without_config_uses_the_default_configuration() -> None:
    assert QueuePlacer().place(app(tags={"namespace": "ns1"})).queue == "root.ns1"


def test_a_config_with_no_partitions_is_valid_and_places_nothing() -> None:
    placer = QueuePlacer(parse_config({"partitions": []}))
    assert placer.place(app()).reason == "unknown-partition"


def test_checksum_key_is_accepted() -> None:
    assert parse_config({"partitions": [], "checksum": "ABC"}).partitions == {}


def test_keys_yunikorn_knows_but_placement_ignores_are_accepted() -> None:
    text = """
partitions:
  - name: default
    limits: [{limit: l, users: [a], maxapplications: 3}]
    preemption: {enabled: true}
    nodesortpolicy: {type: binpacking, resourceweights: {memory: 1.5}}
    usergroupresolver: {type: os}
    queues:
      - name: root
        submitacl: '*'
        properties: {application.sort.policy: fifo}
        queues:
          - name: a
            resources: {guaranteed: {memory: 100}, max: {memory: 200}}
            maxapplications: 10
            childtemplate: {maxapplications: 2, properties: {x: y}, resources: {max: {vcore: 1}}}
            limits: [{limit: l, groups: [g], maxresources: {memory: 10}}]
"""
    assert QueuePlacer(parse_config(text)).place(app(queue="a")).queue == "root.a"


def test_application_partition_names_stay_case_sensitive_after_normalisation() -> None:
    cfg = parse_config(config(partition(name="DEFAULT"), partition(name="GPU")))
    assert set(cfg.partitions) == {"default", "GPU"}
