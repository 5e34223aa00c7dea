"""What `fleetplace simulate` reads: paths and files, objects parsed as written or admitted,
times; every problem is an InputError naming the file, the field and the reason."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from fleetplace.shared.api.admission import read_object
from fleetplace.shared.api.cluster_profiles import ClusterProfile
from fleetplace.shared.api.cluster_sources import fold_cluster_sources, profile_namespaces
from fleetplace.shared.api.objects import Document, ObjectError, Validation, Warn
from fleetplace.shared.api.ocm import ClusterTaints, OcmObject
from fleetplace.shared.api.rollouts import Rollout

_TIME = TypeAdapter(datetime)


class InputError(Exception):
    """Bad input: the message names the file, the field and the reason."""


def parse_time(text: Any, where: str, field: str) -> datetime:
    try:
        t = _TIME.validate_python(text)
    except ValidationError:
        raise InputError(f"{where}: {field}: not an RFC 3339 time: {text!r}") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def read_objects(
    docs: Sequence[tuple[str, Any]],
    admission: bool = False,
    validation: Validation = Validation.IGNORE,
    warn: Warn | None = None,
) -> tuple[list[tuple[OcmObject, Mapping[str, Any]]], dict[str, str]]:
    """Parse documents as written, or (admission) as an API server would store them; with the
    namespaces of the profiles clusters were read from (`profile_namespaces`).

    Every bad document is named, one per line, in one InputError."""
    read: list[tuple[Document, Mapping[str, Any]]] = []
    problems = []
    for where, doc in docs:
        try:
            obj, doc = read_object(doc, where, admission=admission, validation=validation, warn=warn)
        except ObjectError as e:
            problems.append(str(e))
            continue
        if isinstance(obj, Rollout):
            problems.append(
                f"{where}: a Rollout is no input of placement simulate (`fleetplace rollout simulate`)"
            )
            continue
        read.append((obj, doc))
    if problems:
        raise InputError("\n".join(problems))
    # ClusterProfiles and ClusterTaints become the ManagedClusters the engine sees
    objects = [
        (obj, doc)
        for obj, doc in fold_cluster_sources(read)
        if not isinstance(obj, ClusterProfile | ClusterTaints | Rollout)
    ]
    return objects, profile_namespaces(read)


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start}): {e.reason}") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None


def read_paths(paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    for p in paths:
        if p == "-":
            yield "<stdin>", sys.stdin.read()
            continue
        path = Path(p)
        if path.is_dir():
            for child in sorted(path.iterdir()):
                if child.suffix in (".json", ".yaml", ".yml") and child.is_file():
                    yield str(child), _read(child)
        elif path.is_file():
            yield p, _read(path)
        else:
            raise InputError(f"{p}: no such file or directory")
