"""The worked examples of YuniKorn's documentation, as public conformance vectors.

The vectors are the product's published sample (`queues place --vectors` format); where the
documentation's result is wrong, `expect` holds what YuniKorn's code does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from fleetplace.shared.queueing import ApplicationSubmission, ConfigError, QueuePlacer, parse_config

VECTORS: list[dict[str, Any]] = orjson.loads(
    (Path(__file__).parent / "data" / "queues-seed-doc.json").read_bytes()
)


def evaluate(vector: dict[str, Any]) -> dict[str, Any]:
    try:
        config = parse_config(vector["config"])
    except ConfigError:
        return {"config_error": True}
    outcome = QueuePlacer(config).place(ApplicationSubmission.model_validate(vector["app"]))
    return {"rejected": True} if outcome.rejected else {"queue": outcome.queue}


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"][:60] for v in VECTORS])
def test_seed_document_vector(vector: dict[str, Any]) -> None:
    assert evaluate(vector) == vector["expect"]


def test_all_seed_vectors_are_present() -> None:
    assert len(VECTORS) == 19
