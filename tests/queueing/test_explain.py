"""`QueuePlacer.explain`: why the rules passed an application over, rule by rule."""

from __future__ import annotations

from fleetplace.shared.queueing import QueuePlacer, RejectionReason, parse_config
from tests.queueing.helpers import app, config, partition

# production admits john and bob only; batch is a parent by its child (the static check lets
# `fixed: root.batch` through; it never matches); the root has no ACL, so nobody creates queues
PRODUCTION = config(
    partition(
        [{"name": "production", "submitacl": "john,bob"}, {"name": "batch", "queues": [{"name": "nightly"}]}],
        [
            {"name": "fixed", "value": "root.production"},
            {"name": "fixed", "value": "root.batch"},
            {"name": "user", "create": True},
        ],
        root_acl=None,
    )
)


def test_a_rejection_names_each_rule_and_the_acl_or_queue_type_that_refused_it() -> None:
    placer = QueuePlacer(parse_config(PRODUCTION))
    sarah = app("sarah")
    assert placer.place(sarah).reason is RejectionReason.NO_RULE_MATCHED
    assert placer.explain(sarah) == (
        "rule 0 (fixed) proposed root.production: the submit ACLs of root.production and its parents do not admit sarah",
        "rule 1 (fixed) proposed root.batch: not a leaf",
        "rule 2 (user) proposed root.sarah (to be created): the submit ACLs of root and its parents do not admit sarah",
        "default-queue: root.default does not exist",
        "no placement rule matched and no fallback applied",
    )


def test_explaining_places_nothing_and_changes_no_later_answer() -> None:
    placer = QueuePlacer(parse_config(PRODUCTION))
    assert placer.explain(app("john")) == ()  # accepted by rule 0: nothing was passed over
    assert placer.queues()["root.production"].applications == 0
    assert placer.place(app("john")).queue == "root.production"
    assert placer.place(app("sarah", app_id="app-2")).rejected


def test_a_rule_that_does_not_match_says_so_and_an_invalid_user_is_the_whole_story() -> None:
    placer = QueuePlacer(parse_config(config(partition([], [{"name": "tag", "value": "team"}]))))
    assert placer.explain(app("ann")) == (
        "rule 0 (tag): no match",
        "default-queue: root.default does not exist",
        "no placement rule matched and no fallback applied",
    )
    assert placer.explain(app("bad name!", groups=["g"])) == ("invalid user name 'bad name!'",)
