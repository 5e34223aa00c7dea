"""FLEETPLACE_FAILPOINT parsing: a bad value is a clear error, an unset one does nothing."""

from __future__ import annotations

import pytest

from fleetplace.shared.failpoints import ENV, Failpoint


def test_name_and_count_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "queues.before-commit@3")
    assert Failpoint.from_env() == Failpoint("queues.before-commit", 3)
    monkeypatch.setenv(ENV, "queues.before-commit")
    assert Failpoint.from_env() == Failpoint("queues.before-commit", 1)


def test_stop_is_parsed_and_anything_else_after_the_colon_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV, "scheduler.before-publish@2:stop")
    assert Failpoint.from_env() == Failpoint("scheduler.before-publish", 2, stop=True)
    monkeypatch.setenv(ENV, "scheduler.before-publish:pause")
    with pytest.raises(ValueError, match=ENV):
        Failpoint.from_env()


@pytest.mark.parametrize("value", ["x@three", "x@0", "x@-1"])
def test_a_bad_count_names_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ENV, value)
    with pytest.raises(ValueError, match=ENV):
        Failpoint.from_env()


def test_unset_or_another_name_never_fires(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    point = Failpoint.from_env()
    for _ in range(3):
        point.reach("queues.before-commit")  # would SIGKILL this process if it fired
    other = Failpoint("something-else", 1)
    other.reach("queues.before-commit")
    assert other.reached == 0
