"""Helpers for the queue placement tests: configs as Python data, applications by keyword."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.shared.queueing import (
    ApplicationSubmission,
    ConfigError,
    ConfigProblem,
    PlacementOutcome,
    QueuePlacer,
    parse_config,
)

ANYONE = "*"


def partition(
    queues: list[dict[str, Any]] | None = None,
    rules: list[dict[str, Any]] | None = None,
    *,
    root_acl: str | None = ANYONE,
    name: str = "default",
) -> dict[str, Any]:
    """A partition whose listed root holds `queues`; `root_acl=None` leaves the root without ACL."""
    root: dict[str, Any] = {"name": "root"}
    if root_acl is not None:
        root["submitacl"] = root_acl
    if queues:
        root["queues"] = queues
    out: dict[str, Any] = {"name": name, "queues": [root]}
    if rules is not None:
        out["placementrules"] = rules
    return out


def config(*partitions: dict[str, Any]) -> dict[str, Any]:
    return {"partitions": list(partitions)}


def app(
    user: str = "alice",
    *,
    groups: list[str] | None = None,
    queue: str = "",
    tags: dict[str, str] | None = None,
    app_id: str = "app-1",
    partition_name: str = "default",
) -> ApplicationSubmission:
    return ApplicationSubmission(
        applicationID=app_id,
        partition=partition_name,
        user=user,
        groups=tuple(groups if groups is not None else [user]),
        tags=tags or {},
        queue=queue,
    )


def placer(cfg: dict[str, Any] | str) -> QueuePlacer:
    return QueuePlacer(parse_config(cfg))


def place_one(cfg: dict[str, Any] | str, application: ApplicationSubmission) -> PlacementOutcome:
    return placer(cfg).place(application)


def queue_of(cfg: dict[str, Any] | str, application: ApplicationSubmission) -> str | None:
    """The queue the application lands in with a fresh placer, None when rejected."""
    return place_one(cfg, application).queue


def problems_of(cfg: Any) -> tuple[ConfigProblem, ...]:
    with pytest.raises(ConfigError) as caught:
        parse_config(cfg)
    return caught.value.problems


def problem_paths(cfg: Any) -> list[str]:
    return [p.path for p in problems_of(cfg)]
