"""Decoding OCM objects from JSON/YAML with errors that name the object, the field and the reason."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import orjson
import yaml
from pydantic import ValidationError

from fleetplace.shared.api._yaml_loader import Loader as _Loader
from fleetplace.shared.api.cluster_profiles import ClusterProfile
from fleetplace.shared.api.ocm import (
    AddOnPlacementScore,
    ClusterTaints,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    OcmObject,
    Placement,
    PlacementDecision,
)
from fleetplace.shared.api.rollouts import Rollout
from fleetplace.shared.wording import plain

# Every kind a document may be: OCM's objects, SIG-Multicluster's ClusterProfile and fleetplace's
# own ClusterTaints and Rollout.
Document = OcmObject | ClusterProfile | ClusterTaints | Rollout

__all__ = [
    "KINDS",
    "Document",
    "ObjectError",
    "Validation",
    "documents_of",
    "load_yaml",
    "object_ref",
    "parse_object",
]

KINDS: dict[str, type[Document]] = {
    "ManagedCluster": ManagedCluster,
    "ManagedClusterSet": ManagedClusterSet,
    "ManagedClusterSetBinding": ManagedClusterSetBinding,
    "Placement": Placement,
    "PlacementDecision": PlacementDecision,
    "AddOnPlacementScore": AddOnPlacementScore,
    "ClusterProfile": ClusterProfile,
    "ClusterTaints": ClusterTaints,
    "Rollout": Rollout,
}


class ObjectError(ValueError):
    """A document that is not a valid OCM object. str() = '<where>: <object>: <path>: <reason>'."""

    def __init__(self, where: str, obj: str, problems: list[tuple[str, str]]) -> None:
        self.where = where
        self.obj = obj
        self.problems = problems
        head = f"{where}: " if where else ""
        text = "; ".join(f"{path}: {reason}" if path else reason for path, reason in problems)
        super().__init__(f"{head}{obj}: {text}")


def object_ref(raw: Mapping[str, Any]) -> str:
    kind = raw.get("kind") or "object"
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    ns, name = meta.get("namespace"), meta.get("name")
    ident = f"{ns}/{name}" if ns else f"{name}"
    return f"{kind} {ident!r}" if name else str(kind)


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("function-") or part in ("str", "int", "list[str]", "dict[str,str]"):
            continue
        else:
            out += ("." if out else "") + part
    return out


def parse_object(raw: Any, where: str = "") -> Document:
    """Validate one decoded document as the kind it names."""
    # a dict (every decoded record) is a Mapping: the ABC check is for anything else
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise ObjectError(where, "document", [("", f"expected an object, got {type(raw).__name__}")])
    kind = raw.get("kind")
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ObjectError(
            where, object_ref(raw), [("kind", f"unsupported kind {kind!r}; expected one of {sorted(KINDS)}")]
        )
    try:
        # what model_validate(raw) does, minus its Python-level argument checks (per record)
        obj: Document = model.__pydantic_validator__.validate_python(raw)
        return obj
    except ValidationError as e:
        raise ObjectError(where, object_ref(raw), problems_of(e)) from None


def problems_of(error: ValidationError) -> list[tuple[str, str]]:
    """(JSON path, reason) of every error pydantic found."""
    return [(_path(err["loc"]), plain(err)) for err in error.errors(include_url=False)]


class Validation(enum.StrEnum):
    """What an unknown field, an unknown apiVersion or a duplicated YAML key is (kubectl's --validate)."""

    STRICT = "strict"  # an error
    WARN = "warn"  # a warning; the document is used as if the field were not there
    IGNORE = "ignore"  # nothing


Warn = Callable[[str], None]


def load_yaml(
    text: str, where: str, validation: Validation = Validation.STRICT, warn: Warn | None = None
) -> list[Any]:
    """Every non-empty document of a YAML text. A duplicated key is an ObjectError (strict), a
    warning (warn) or nothing (ignore); a syntax error is an ObjectError with its line and column."""

    def duplicate(message: str) -> None:
        if validation is Validation.STRICT:
            raise ObjectError(where, "file", [("", message)])
        if validation is Validation.WARN and warn is not None:
            warn(f"{where}: {message}")

    loader: Any = cast(Any, _Loader)(text)  # the parser's constructor takes the text
    loader.duplicate = duplicate
    try:
        docs = []
        while loader.check_data():
            doc = loader.get_data()
            if doc is not None:
                docs.append(doc)
        return docs
    except RecursionError:
        # PyYAML recurses once per nesting level: a hostile document must not end in a traceback
        raise ObjectError(where, "file", [("", "the document nests too deeply to be read")]) from None
    except yaml.YAMLError as e:
        message = str(e).replace('"<unicode string>"', where or "the text").replace('"<file>"', where)
        raise ObjectError(where, "file", [("", f"not valid YAML or JSON: {message}")]) from None
    finally:
        loader.dispose()


def documents_of(
    text: str, where: str, validation: Validation = Validation.STRICT, warn: Warn | None = None
) -> Iterator[tuple[str, Any]]:
    """Every object in a JSON or YAML text: a k8s List, a JSON array, or (multi-document) YAML.

    Yields (location, document); location names the file and the document index.
    """
    stripped = text.lstrip()
    docs: list[Any] | None = None
    if stripped[:1] in ("{", "["):
        with contextlib.suppress(orjson.JSONDecodeError):
            docs = [orjson.loads(text)]
    if docs is None:
        docs = load_yaml(text, where, validation, warn)
    index = 0
    for doc in docs:
        items = doc if isinstance(doc, list) else [doc]
        for item in items:
            if (
                isinstance(item, Mapping)
                and isinstance(item.get("items"), list)
                and str(item.get("kind", "")).endswith("List")
            ):
                for sub in item["items"]:
                    yield f"{where}#{index}", sub
                    index += 1
            else:
                yield f"{where}#{index}", item
                index += 1
