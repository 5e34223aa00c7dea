"""`Reads` unions: what a placement reads is the field-by-field union of what its plugins read,
however the union is reached (an operand that adds nothing is returned as it is)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fleetplace.shared.placement.reads import NOTHING, Reads

keys = st.frozensets(st.sampled_from(["region", "zone", "tier"]), max_size=2)


@st.composite
def reads(draw: st.DrawFn) -> Reads:
    if draw(st.booleans()):
        return NOTHING
    return Reads(
        label_keys=draw(keys),
        claim_keys=draw(keys),
        resources=draw(st.frozensets(st.sampled_from(["cpu", "memory"]))),
        addon_resources=draw(st.frozensets(st.sampled_from(["demo", "gpu"]))),
        cel=draw(st.booleans()),
        other_decisions=draw(st.booleans()),
    )


def fieldwise(a: Reads, b: Reads) -> Reads:
    return Reads(
        a.label_keys | b.label_keys,
        a.claim_keys | b.claim_keys,
        a.resources | b.resources,
        a.addon_resources | b.addon_resources,
        a.cel or b.cel,
        a.other_decisions or b.other_decisions,
    )


@given(reads(), reads())
def test_a_union_is_the_fieldwise_union(a: Reads, b: Reads) -> None:
    assert a | b == fieldwise(a, b) == b | a


@given(reads(), reads())
def test_an_operand_that_adds_nothing_is_the_union(a: Reads, b: Reads) -> None:
    union = a | b
    assert union.covers(a) and union.covers(b)
    if a.covers(b):
        assert union is a
    assert (a | NOTHING) is a
    assert (NOTHING | a) == a
