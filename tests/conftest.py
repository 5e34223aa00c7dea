"""Fixtures shared by every test package.

`broker`: one embedded Tansu broker per test session (or FLEETPLACE_TEST_BOOTSTRAP).
`topic_prefix`: a fresh topic prefix per test, so tests never see each other's records.
`topics`: the whole catalogue created under that prefix, as a `Topics`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetplace.shared import native
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.testing import create_topics, embedded_broker_fixture, topic_prefix_fixture

broker = embedded_broker_fixture(scope="session")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test compiled code older than its sources (see shared/native.py)."""
    edited = native.stale(Path(__file__).resolve().parent.parent)
    if edited:
        shown = ", ".join(edited[:5]) + (f" and {len(edited) - 5} more" if len(edited) > 5 else "")
        pytest.exit(
            f"the compiled modules are older than {shown}: run `make native` (or any make target) "
            f"to rebuild them, or build with {native.PURE_PYTHON_ENV}=1",
            returncode=2,
        )


topic_prefix = topic_prefix_fixture()


@pytest.fixture
async def topics(broker: str, topic_prefix: str) -> Topics:
    created, _ = await create_topics(broker, topic_prefix)
    return created


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A free port on 127.0.0.1, held by a listening socket for the test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])
