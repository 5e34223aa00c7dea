"""YuniKorn queue placement on the wire: the partition config, a submission, a placement outcome.

The config models mirror YuniKorn's own config types (`pkg/common/configs/config.go`) key for
key, and decode the way YuniKorn's YAML decoder does:

* unknown keys anywhere are an error (YuniKorn decodes strictly);
* a string field takes the *source text* of any scalar (`name: 1234` is the name "1234",
  `value: 0x1F` the value "0x1F"), because Go's YAML decoder does so; `null` leaves the
  field at its zero value;
* a boolean field takes a boolean, or one of the YAML 1.1 words Go's decoder still accepts for
  a typed bool (`yes`, `on`, `n`…); any other string, `"true"` included, is an error;
* lists and mappings must be lists and mappings: a bare string for `users` or a list for a
  rule's `parent` is an error.

These models only check *shape*. The meaning — names, patterns, ACLs, rules, the static path
check — is validated by `fleetplace.shared.queueing.parse_config`, which turns them into immutable rule
objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, NamedTuple

import orjson
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from fleetplace.shared.wording import plain

__all__ = [
    "ApplicationSubmission",
    "ChildTemplateConfig",
    "FilterConfig",
    "LimitConfig",
    "NodeSortPolicyConfig",
    "PartitionConfig",
    "PlacementOutcome",
    "PlacementRuleConfig",
    "PreemptionConfig",
    "QueueConfig",
    "RejectionReason",
    "ResourcesConfig",
    "SchedulerConfig",
    "UserGroupResolverConfig",
    "YamlScalar",
    "field_errors",
]


@dataclass(frozen=True, slots=True)
class YamlScalar:
    """A plain YAML (or JSON number) scalar that resolved to a non-string, kept with its text.

    Go's decoder fills a string field with the scalar's source text and a bool or number field
    with its resolved value; carrying both lets one model do either (module docstring).
    """

    text: str
    value: bool | int | float


# Go's yaml.v3 accepts these YAML 1.1 words for a typed bool field, quoted or not.
_GO_YAML_BOOL_WORDS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "off", "Off", "OFF"), False),
}


def _go_text(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, YamlScalar):
        return v.text
    if isinstance(v, bool):  # a JSON true/false: its text is the same word
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    return v


def _go_bool(v: Any) -> Any:
    if v is None:
        return False
    if isinstance(v, YamlScalar):
        return v.value
    if isinstance(v, str) and v in _GO_YAML_BOOL_WORDS:
        return _GO_YAML_BOOL_WORDS[v]
    return v


def _go_number(v: Any) -> Any:
    if v is None:
        return 0
    if isinstance(v, YamlScalar):
        return v.value
    return v


def _null_to_empty_list(v: Any) -> Any:
    return [] if v is None else v


def _null_to_empty_dict(v: Any) -> Any:
    return {} if v is None else v


GoText = Annotated[StrictStr, BeforeValidator(_go_text)]
GoBool = Annotated[StrictBool, BeforeValidator(_go_bool)]
GoUint = Annotated[StrictInt, BeforeValidator(_go_number), Field(ge=0)]
GoFloat = Annotated[float, BeforeValidator(_go_number)]
TextList = Annotated[list[GoText], BeforeValidator(_null_to_empty_list)]
TextMap = Annotated[dict[str, GoText], BeforeValidator(_null_to_empty_dict)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ResourcesConfig(_Strict):
    # None and {} differ: YuniKorn refuses *any* resources map on the root, even an empty one
    guaranteed: dict[str, GoText] | None = None
    max: dict[str, GoText] | None = None


class ChildTemplateConfig(_Strict):
    maxapplications: GoUint = 0
    properties: TextMap = Field(default_factory=dict)
    resources: ResourcesConfig | None = None


class LimitConfig(_Strict):
    limit: GoText = ""
    users: TextList = Field(default_factory=list)
    groups: TextList = Field(default_factory=list)
    maxresources: TextMap = Field(default_factory=dict)
    maxapplications: GoUint = 0


class FilterConfig(_Strict):
    """A rule's user/group filter. `None` lists and empty lists are the same."""

    type: GoText = ""
    users: TextList = Field(default_factory=list)
    groups: TextList = Field(default_factory=list)


class PlacementRuleConfig(_Strict):
    """One placement rule as configured; `parent` is a single nested rule (a list is an error)."""

    name: GoText = ""
    create: GoBool = False
    parent: PlacementRuleConfig | None = None
    filter: FilterConfig | None = None
    value: GoText = ""


class QueueConfig(_Strict):
    name: GoText = ""
    parent: GoBool = False
    resources: ResourcesConfig | None = None
    maxapplications: GoUint = 0
    properties: TextMap = Field(default_factory=dict)
    adminacl: GoText = ""
    submitacl: GoText = ""
    childtemplate: ChildTemplateConfig | None = None
    queues: list[QueueConfig] | None = None
    limits: list[LimitConfig] | None = None


class PreemptionConfig(_Strict):
    enabled: GoBool | None = None
    quotapreemptionenabled: GoBool | None = None


class NodeSortPolicyConfig(_Strict):
    type: GoText = ""
    resourceweights: Annotated[dict[str, GoFloat], BeforeValidator(_null_to_empty_dict)] = Field(
        default_factory=dict
    )


class UserGroupResolverConfig(_Strict):
    type: GoText = ""


class PartitionConfig(_Strict):
    name: GoText = ""
    # None (absent or null) is a config error; an empty list is a root without children
    queues: list[QueueConfig] | None = None
    placementrules: list[PlacementRuleConfig] | None = None
    limits: list[LimitConfig] | None = None
    preemption: PreemptionConfig | None = None
    nodesortpolicy: NodeSortPolicyConfig | None = None
    usergroupresolver: UserGroupResolverConfig | None = None


class SchedulerConfig(_Strict):
    """The whole document: `partitions`, plus the `checksum` YuniKorn writes into it."""

    partitions: list[PartitionConfig] | None = None
    checksum: GoText = ""


class ApplicationSubmission(BaseModel):
    """An application asking to be placed. Types are strict: no coercion."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    application_id: StrictStr = Field(alias="applicationID")
    partition: StrictStr = ""
    user: StrictStr = ""
    groups: Annotated[tuple[StrictStr, ...], BeforeValidator(_null_to_empty_list)] = ()
    tags: Annotated[dict[StrictStr, StrictStr], BeforeValidator(_null_to_empty_dict)] = Field(
        default_factory=dict
    )
    queue: StrictStr = ""


class RejectionReason(StrEnum):
    """Why an application was not placed (a rule's rejection, or a partition-level refusal)."""

    UNKNOWN_PARTITION = "unknown-partition"
    PARTITION_DRAINING = "partition-draining"
    DUPLICATE_APPLICATION = "duplicate-application"
    INVALID_USER = "invalid-user"
    RULE_ERROR = "rule-error"
    NO_RULE_MATCHED = "no-rule-matched"
    CREATE_DENIED = "create-denied"
    CREATE_UNDER_LEAF = "create-under-leaf"
    CREATE_REFUSED = "create-refused"
    NOT_A_LEAF = "not-a-leaf"


class PlacementOutcome(NamedTuple):
    """The answer for one application: a queue, or a rejection with its reason.

    `rule` is the type of the accepted top-level rule (`provided`, `user`, `fixed`, `tag`),
    `recovery`, or `default-queue` for the fallback; `rule_index` is its position in the
    partition's rule list (None for the last two). `detail` is a human sentence, kept out of
    the compact record. A named tuple: immutable, and cheap enough to make one per record.
    """

    application_id: str
    queue: str | None = None
    rule: str | None = None
    rule_index: int | None = None
    created: bool = False
    reason: RejectionReason | None = None
    detail: str = ""

    @property
    def rejected(self) -> bool:
        return self.queue is None

    def to_json(self) -> dict[str, Any]:
        """The record the CLI prints and the worker publishes, one per application."""
        if self.queue is None:
            return {"applicationID": self.application_id, "rejected": True, "reason": str(self.reason)}
        return {
            "applicationID": self.application_id,
            "queue": self.queue,
            "rule": self.rule,
            "created": self.created,
        }

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.to_json())

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> PlacementOutcome:
        """Read back a record written by `to_json` (what a subscriber of the output sees)."""
        if record.get("rejected"):
            return cls(str(record["applicationID"]), reason=RejectionReason(record["reason"]))
        return cls(
            str(record["applicationID"]),
            str(record["queue"]),
            record.get("rule"),
            created=bool(record.get("created")),
        )


_EXPECTED = {
    "bool_type": "a boolean (true or false)",
    "bool_parsing": "a boolean (true or false)",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "int_type": "a non-negative integer",
    "greater_than_equal": "a non-negative integer",
    "float_type": "a number",
}


def _described(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if value is None:
        return "null"
    return repr(value.text if isinstance(value, YamlScalar) else value)


def _loc_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def field_errors(error: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    """A validation error of these models as (field path, reason) pairs, in plain words."""
    out = []
    for e in error.errors(include_url=False):
        path = _loc_path(tuple(e["loc"]))
        if prefix:
            path = f"{prefix}{path}" if path.startswith("[") or not path else f"{prefix}.{path}"
        kind = e["type"]
        if kind == "extra_forbidden":
            reason = "unknown key"
        elif kind == "missing":
            reason = "is required"
        elif kind in _EXPECTED:
            reason = f"must be {_EXPECTED[kind]}, not {_described(e.get('input'))}"
            if kind == "model_type" and path.endswith(".parent"):
                reason += " (a parent rule is a single rule mapping, not a list)"
        else:
            reason = plain(e)
        out.append((path, reason))
    return out
