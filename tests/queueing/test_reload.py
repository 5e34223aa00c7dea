"""Reloading a placer with a new config keeps dynamic queues and drains removed ones."""

from __future__ import annotations

import pytest

from fleetplace.shared.queueing import ConfigError, parse_config
from tests.queueing.helpers import app, config, partition, placer

USER_CREATE = [{"name": "user", "create": True}]


def test_dynamic_queues_survive_a_reload() -> None:
    p = placer(config(partition(rules=USER_CREATE)))
    p.place(app("ann", app_id="1"))
    p.reload(parse_config(config(partition([{"name": "extra"}], USER_CREATE))))
    queues = p.queues()
    assert queues["root.ann"].dynamic and "root.extra" in queues
    again = p.place(app("ann", app_id="2"))
    assert (again.queue, again.created) == ("root.ann", False)


def test_live_applications_survive_a_reload() -> None:
    p = placer(config(partition(rules=USER_CREATE)))
    p.place(app("ann", app_id="1"))
    p.reload(parse_config(config(partition(rules=USER_CREATE))))
    assert p.place(app("ann", app_id="1")).reason == "duplicate-application"


def test_new_rules_apply_after_a_reload() -> None:
    p = placer(config(partition([{"name": "a"}, {"name": "b"}], [{"name": "fixed", "value": "a"}])))
    assert p.place(app(app_id="1")).queue == "root.a"
    p.reload(
        parse_config(config(partition([{"name": "a"}, {"name": "b"}], [{"name": "fixed", "value": "b"}])))
    )
    assert p.place(app(app_id="2")).queue == "root.b"


def test_acl_changes_apply_after_a_reload() -> None:
    p = placer(config(partition([{"name": "q", "submitacl": "ann"}], [{"name": "provided"}], root_acl=None)))
    assert p.place(app("bob", queue="q", app_id="1")).rejected
    p.reload(
        parse_config(
            config(partition([{"name": "q", "submitacl": "bob"}], [{"name": "provided"}], root_acl=None))
        )
    )
    assert p.place(app("bob", queue="q", app_id="2")).queue == "root.q"


def test_dynamic_queue_named_in_the_new_config_becomes_configured() -> None:
    p = placer(config(partition(rules=USER_CREATE)))
    p.place(app("ann"))
    p.reload(parse_config(config(partition([{"name": "ann", "submitacl": "ann"}], USER_CREATE))))
    state = p.queues()["root.ann"]
    assert not state.dynamic and state.leaf


def test_configured_queue_missing_from_the_new_config_drains() -> None:
    rules = [{"name": "provided", "create": True}]
    p = placer(config(partition([{"name": "old"}, {"name": "team", "parent": True}], rules)))
    assert p.place(app(queue="old", app_id="1")).queue == "root.old"
    p.reload(parse_config(config(partition([], rules))))
    assert p.queues()["root.old"].draining
    # a draining queue accepts no new applications: the proposal is refused, nothing else matches
    assert p.place(app(queue="old", app_id="2")).reason == "no-rule-matched"
    # the empty configured queue that went away is gone at once
    assert "root.team" not in p.queues()


def test_draining_queue_disappears_when_its_last_application_leaves() -> None:
    rules = [{"name": "provided"}]
    p = placer(config(partition([{"name": "old"}], rules)))
    p.place(app(queue="old", app_id="1"))
    p.reload(parse_config(config(partition([], rules))))
    assert "root.old" in p.queues()
    p.release("1")
    assert "root.old" not in p.queues()


def test_no_new_children_under_a_draining_parent() -> None:
    rules = [{"name": "provided", "create": True}]
    p = placer(config(partition([{"name": "team", "parent": True}], rules)))
    p.place(app(queue="root.team.a", app_id="1"))
    p.reload(parse_config(config(partition([], rules))))
    assert p.place(app(queue="root.team.b", app_id="2")).reason == "create-refused"
    # its dynamic child is not draining itself and still takes applications (YuniKorn does the same)
    assert p.place(app(queue="root.team.a", app_id="3")).queue == "root.team.a"


def test_draining_queue_named_again_runs_again() -> None:
    rules = [{"name": "provided"}]
    p = placer(config(partition([{"name": "old"}], rules)))
    p.place(app(queue="old", app_id="1"))
    p.reload(parse_config(config(partition([], rules))))
    p.reload(parse_config(config(partition([{"name": "old"}], rules))))
    assert not p.queues()["root.old"].draining
    assert p.place(app(queue="old", app_id="2")).queue == "root.old"


def test_removed_partition_drains_and_refuses_applications() -> None:
    p = placer(config(partition(rules=USER_CREATE), partition(name="gpu", rules=USER_CREATE)))
    p.reload(parse_config(config(partition(rules=USER_CREATE))))
    assert p.place(app(partition_name="gpu")).reason == "partition-draining"
    p.reload(parse_config(config(partition(rules=USER_CREATE), partition(name="gpu", rules=USER_CREATE))))
    assert p.place(app(partition_name="gpu")).queue == "root.alice"


def test_added_partition_starts_fresh() -> None:
    p = placer(config(partition(rules=USER_CREATE)))
    p.reload(parse_config(config(partition(rules=USER_CREATE), partition(name="gpu", rules=USER_CREATE))))
    assert p.place(app(partition_name="gpu")).queue == "root.alice"


def test_a_broken_config_never_reaches_the_placer() -> None:
    p = placer(config(partition(rules=USER_CREATE)))
    with pytest.raises(ConfigError):
        p.reload(parse_config(config(partition(rules=[{"name": "nope"}]))))
    assert p.place(app("ann")).queue == "root.ann"


def test_empty_dynamic_queue_is_removed_when_its_last_application_leaves() -> None:
    p = placer(config(partition(rules=[{"name": "provided", "create": True}])))
    p.place(app(queue="root.a.b", app_id="1"))
    p.release("1")
    assert set(p.queues()) == {"root"}
    assert p.place(app(queue="root.a.b", app_id="2")).created
