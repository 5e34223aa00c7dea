"""The one YAML emitter: every YAML the product writes (commands, the explorer, generated docs)
comes from here, so the same value reads the same everywhere.

Plain JSON types only (a value goes through JSON first: no Python tags), keys in the order given,
and text as UTF-8 characters, never escaped (`100×1`, not `100\\xD71`); callers that write bytes
encode the text as UTF-8 whatever the locale (`write_yaml_documents`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, TextIO

import orjson
import yaml

__all__ = ["write_yaml_documents", "yaml_document", "yaml_documents"]

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _plain(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def yaml_document(value: Any, *, width: int | None = None) -> str:
    """One YAML document, without a `---` line (an HTTP body, a file of one object)."""
    text: str = yaml.dump(
        _plain(value),
        Dumper=_DUMPER,
        sort_keys=False,
        allow_unicode=True,
        width=width,
    )
    return text


def yaml_documents(values: Iterable[Any]) -> str:
    """One YAML document per value, each starting with `---` (what `kubectl apply -f -` takes)."""
    return yaml.dump_all(
        [_plain(v) for v in values],
        Dumper=_DUMPER,
        explicit_start=True,
        sort_keys=False,
        allow_unicode=True,
    )


def write_yaml_documents(values: Iterable[Any], stream: TextIO | None = None) -> None:
    """`yaml_documents` written to `stream` (stdout) as UTF-8 bytes, whatever the locale says."""
    out = sys.stdout if stream is None else stream
    text = yaml_documents(values)
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(text)
    else:
        out.flush()
        buffer.write(text.encode("utf-8"))
        buffer.flush()
