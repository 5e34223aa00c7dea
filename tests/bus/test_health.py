"""The broker watch's log filter: aiokafka repeats the same few lines while a broker is gone."""

from __future__ import annotations

import logging

from fleetplace.shared.bus.health import RepeatedLogFilter


def _record(msg: str, *args: object, level: int = logging.ERROR, name: str = "aiokafka") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_the_first_line_of_each_kind_passes_and_repeats_are_held_back_until_reset() -> None:
    now = [0.0]
    quiet = RepeatedLogFilter(window_s=60, clock=lambda: now[0])
    unable = "Unable connect to node with id %s: %s"
    assert quiet.filter(_record(unable, 111, "refused"))
    assert not any(quiet.filter(_record(unable, 111, "refused")) for _ in range(100))
    assert quiet.filter(_record("Unable to update metadata from %s", [111]))  # another kind
    assert quiet.filter(_record(unable, 111, "refused", name="aiokafka.conn"))  # another logger
    assert quiet.filter(_record("retrying", level=logging.INFO))  # below warning: untouched
    assert quiet.held_back == 100
    now[0] = 61
    assert quiet.filter(_record(unable, 111, "refused"))  # once a window in a long outage
    quiet.reset()  # the broker is back: the next outage shows its first lines again
    assert quiet.filter(_record("Unable to update metadata from %s", [111]))
