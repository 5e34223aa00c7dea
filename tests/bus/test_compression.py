"""Any producer may compress its record batches; the workers must be able to read them all."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from aiokafka import codec

PAYLOAD = b'{"kind":"ManagedCluster","name":"cluster-1"}' * 64


@pytest.mark.parametrize(
    ("available", "encode", "decode"),
    [
        pytest.param(codec.has_zstd, codec.zstd_encode, codec.zstd_decode, id="zstd"),
        pytest.param(codec.has_lz4, codec.lz4_encode, codec.lz4_decode, id="lz4"),
        pytest.param(codec.has_snappy, codec.snappy_encode, codec.snappy_decode, id="snappy"),
    ],
)
def test_compressed_batches_round_trip(
    available: Callable[[], bool], encode: Callable[[bytes], bytes], decode: Callable[[bytes], bytes]
) -> None:
    assert available(), "the codec library aiokafka needs for this compression is not installed"
    assert decode(encode(PAYLOAD)) == PAYLOAD
