"""Open Cluster Management resources as OCM serialises them (camelCase JSON/YAML).

The models read objects *as written*: an absent field keeps Go's zero value, because the
placement controller sees objects that way (it uses objects exactly as written; defaults are the
API server's business).
The CRD defaults and the CRD validation an API server would apply live in
:mod:`fleetplace.shared.api.admission`, applied where objects enter from users (publish, worker ingest).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Strict,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from fleetplace.shared.api.names import derived_label_value, derived_object_name

GROUP = "cluster.open-cluster-management.io"
CLUSTERSET_LABEL = f"{GROUP}/clusterset"
PLACEMENT_LABEL = f"{GROUP}/placement"
DECISION_GROUP_INDEX_LABEL = f"{GROUP}/decision-group-index"
DECISION_GROUP_NAME_LABEL = f"{GROUP}/decision-group-name"
DISABLE_ANNOTATION = f"{GROUP}/experimental-scheduling-disable"


def placement_label_value(placement_name: str) -> str:
    """The `cluster.open-cluster-management.io/placement` label of a placement's decisions: the
    name, or, past 63 characters or otherwise not a label value, its shortened form (docs/names.md)."""
    return derived_label_value(placement_name)


def decision_page_name(placement_name: str, page: int) -> str:
    """`<placement>-decision-<page>` as OCM names its PlacementDecisions (pages from 1), the
    placement's name shortened where the whole would pass 253 characters (docs/names.md)."""
    return derived_object_name(placement_name, f"-decision-{page}")


def _null_to_empty_dict(v: Any) -> Any:
    return {} if v is None else v


def _null_to_empty_list(v: Any) -> Any:
    return [] if v is None else v


def _quantity_text(v: Any) -> Any:
    # A Quantity may be a JSON number; Kubernetes parses its text (resource.Quantity.UnmarshalJSON).
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else str(int(v))
    return v


class _QuantityText:
    """A Quantity field: a string as it is, or a JSON number as its text (`_quantity_text`).

    Same values and errors as `Annotated[str, BeforeValidator(_quantity_text)]`, but a string
    (nearly every quantity) is taken by the first branch without a Python call; only what is not
    a string goes through the conversion, and a failure is the one string error either way."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.union_schema(
            [
                core_schema.str_schema(),
                core_schema.no_info_before_validator_function(_quantity_text, core_schema.str_schema()),
            ],
            mode="left_to_right",
            custom_error_type="string_type",
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(core_schema.str_schema())


def _aware(v: datetime) -> datetime:
    # metav1.Time is UTC on the wire; a timestamp without an offset is read as UTC
    return v.replace(tzinfo=UTC) if v.tzinfo is None else v


Time = Annotated[datetime, AfterValidator(_aware)]
# Go's JSON decoder takes only JSON numbers without a fraction for integer fields: "3", 3.0 and
# true are decode errors there, so they are validation errors here too.
GoInt = Annotated[int, Strict()]
StrMap = Annotated[dict[str, str], BeforeValidator(_null_to_empty_dict)]
Quantity = Annotated[str, _QuantityText]
QuantityMap = Annotated[dict[str, Quantity], BeforeValidator(_null_to_empty_dict)]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore", strict=False
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        # Go's encoding/json: null leaves a field at its zero value (nil for pointers), i.e. as if
        # absent; every field here defaults to that zero value.
        if isinstance(data, dict) and None in data.values():
            return {k: v for k, v in data.items() if v is not None}
        return data


class ObjectMeta(_Model):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    generation: int = 0
    resource_version: str = ""
    labels: StrMap = Field(default_factory=dict)
    annotations: StrMap = Field(default_factory=dict)
    deletion_timestamp: Time | None = None
    creation_timestamp: Time | None = None


# ---------------------------------------------------------------------------------------------
# selectors


class LabelSelectorRequirement(_Model):
    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class LabelSelector(_Model):
    match_labels: StrMap = Field(default_factory=dict)
    match_expressions: Annotated[list[LabelSelectorRequirement], BeforeValidator(_null_to_empty_list)] = (
        Field(default_factory=list)
    )


class ClaimSelector(_Model):
    match_expressions: Annotated[list[LabelSelectorRequirement], BeforeValidator(_null_to_empty_list)] = (
        Field(default_factory=list)
    )


class CelSelector(_Model):
    cel_expressions: Annotated[list[str], BeforeValidator(_null_to_empty_list)] = Field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# ManagedCluster


class Taint(_Model):
    key: str = ""
    value: str = ""
    effect: str = ""
    time_added: Time | None = None


class ClusterClaim(_Model):
    name: str = ""
    value: str = ""


class ManagedClusterSpec(_Model):
    hub_accepts_client: bool = False
    taints: Annotated[list[Taint], BeforeValidator(_null_to_empty_list)] = Field(default_factory=list)


class ManagedClusterStatus(_Model):
    allocatable: QuantityMap = Field(default_factory=dict)
    capacity: QuantityMap = Field(default_factory=dict)
    cluster_claims: Annotated[list[ClusterClaim], BeforeValidator(_null_to_empty_list)] = Field(
        default_factory=list
    )


class ManagedCluster(_Model):
    api_version: str = f"{GROUP}/v1"
    kind: Literal["ManagedCluster"] = "ManagedCluster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ManagedClusterSpec = Field(default_factory=ManagedClusterSpec)
    status: ManagedClusterStatus = Field(default_factory=ManagedClusterStatus)


# ---------------------------------------------------------------------------------------------
# ManagedClusterSet / ManagedClusterSetBinding


class ManagedClusterSelector(_Model):
    selector_type: str = ""
    label_selector: LabelSelector | None = None


class ManagedClusterSetSpec(_Model):
    cluster_selector: ManagedClusterSelector = Field(default_factory=ManagedClusterSelector)


class ManagedClusterSet(_Model):
    api_version: str = f"{GROUP}/v1beta2"
    kind: Literal["ManagedClusterSet"] = "ManagedClusterSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ManagedClusterSetSpec = Field(default_factory=ManagedClusterSetSpec)


class ManagedClusterSetBindingSpec(_Model):
    cluster_set: str = ""


class ManagedClusterSetBinding(_Model):
    api_version: str = f"{GROUP}/v1beta2"
    kind: Literal["ManagedClusterSetBinding"] = "ManagedClusterSetBinding"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ManagedClusterSetBindingSpec = Field(default_factory=ManagedClusterSetBindingSpec)


# ---------------------------------------------------------------------------------------------
# Placement


class ClusterSelector(_Model):
    label_selector: LabelSelector | None = None
    claim_selector: ClaimSelector | None = None
    cel_selector: CelSelector | None = None


class ClusterPredicate(_Model):
    required_cluster_selector: ClusterSelector = Field(default_factory=ClusterSelector)


class AddOnScore(_Model):
    resource_name: str = ""
    score_name: str = ""


class ScoreCoordinate(_Model):
    type: str = ""
    built_in: str = Field(default="", alias="builtIn")
    add_on: AddOnScore | None = Field(default=None, alias="addOn")


class PrioritizerConfig(_Model):
    score_coordinate: ScoreCoordinate | None = None
    weight: GoInt = 0


class PrioritizerPolicy(_Model):
    mode: str = ""
    configurations: Annotated[list[PrioritizerConfig], BeforeValidator(_null_to_empty_list)] = Field(
        default_factory=list
    )


class Toleration(_Model):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: GoInt | None = None


class GroupClusterSelector(_Model):
    label_selector: LabelSelector | None = None
    claim_selector: ClaimSelector | None = None


class DecisionGroup(_Model):
    group_name: str = ""
    group_cluster_selector: GroupClusterSelector = Field(default_factory=GroupClusterSelector)


class GroupStrategy(_Model):
    decision_groups: Annotated[list[DecisionGroup], BeforeValidator(_null_to_empty_list)] = Field(
        default_factory=list
    )
    # int-or-string: the integer 3 is a group size, while the string "3" (no `%`) makes the
    # placement Misconfigured, as in OCM; both forms are kept as written
    clusters_per_decision_group: GoInt | str | None = None


class DecisionStrategy(_Model):
    group_strategy: GroupStrategy = Field(default_factory=GroupStrategy)


class SpreadConstraint(_Model):
    topology_key: str = ""
    topology_key_type: str = ""
    max_skew: GoInt = 0
    when_unsatisfiable: str = ""


class SpreadPolicy(_Model):
    spread_constraints: Annotated[list[SpreadConstraint], BeforeValidator(_null_to_empty_list)] = Field(
        default_factory=list
    )


class PlacementSpec(_Model):
    cluster_sets: Annotated[list[str], BeforeValidator(_null_to_empty_list)] = Field(default_factory=list)
    number_of_clusters: GoInt | None = None
    predicates: Annotated[list[ClusterPredicate], BeforeValidator(_null_to_empty_list)] = Field(
        default_factory=list
    )
    prioritizer_policy: PrioritizerPolicy = Field(default_factory=PrioritizerPolicy)
    tolerations: Annotated[list[Toleration], BeforeValidator(_null_to_empty_list)] = Field(
        default_factory=list
    )
    decision_strategy: DecisionStrategy = Field(default_factory=DecisionStrategy)
    spread_policy: SpreadPolicy = Field(default_factory=SpreadPolicy)
    sort_by: str = ""
    score_rate_limit: str = ""


class Placement(_Model):
    api_version: str = f"{GROUP}/v1beta1"
    kind: Literal["Placement"] = "Placement"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PlacementSpec = Field(default_factory=PlacementSpec)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


# ---------------------------------------------------------------------------------------------
# PlacementDecision


class ClusterDecision(_Model):
    cluster_name: str = ""
    reason: str = ""
    score: int = 0


class PlacementDecisionStatus(_Model):
    decisions: Annotated[list[ClusterDecision], BeforeValidator(_null_to_empty_list)] = Field(
        default_factory=list
    )


class PlacementDecision(_Model):
    api_version: str = f"{GROUP}/v1beta1"
    kind: Literal["PlacementDecision"] = "PlacementDecision"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    status: PlacementDecisionStatus = Field(default_factory=PlacementDecisionStatus)


# ---------------------------------------------------------------------------------------------
# AddOnPlacementScore


class AddOnPlacementScoreItem(_Model):
    name: str = ""
    value: GoInt = 0


class AddOnPlacementScoreStatus(_Model):
    scores: Annotated[list[AddOnPlacementScoreItem], BeforeValidator(_null_to_empty_list)] = Field(
        default_factory=list
    )
    valid_until: Time | None = None


class AddOnPlacementScore(_Model):
    api_version: str = f"{GROUP}/v1alpha1"
    kind: Literal["AddOnPlacementScore"] = "AddOnPlacementScore"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    status: AddOnPlacementScoreStatus = Field(default_factory=AddOnPlacementScoreStatus)


OcmObject = (
    ManagedCluster
    | ManagedClusterSet
    | ManagedClusterSetBinding
    | Placement
    | PlacementDecision
    | AddOnPlacementScore
)


class TaintSet(BaseModel):
    """A record of the taints topic."""

    taints: list[Taint] = []


# ---------------------------------------------------------------------------------------------
# fleetplace's own document for the taints topic


TAINTS_API_VERSION = "fleetplace.dev/v1alpha1"


class ClusterTaintsSpec(_Model):
    taints: Annotated[list[Taint], BeforeValidator(_null_to_empty_list)] = Field(default_factory=list)


class ClusterTaints(_Model):
    """The taints a taint owner (a health checker, an operator) puts on one cluster, as a document
    `fleetplace publish` sends to the taints topic: key = metadata.name (the cluster), value =
    `{"taints": spec.taints}`. They add to the ManagedCluster's own taints (docs/topics.md#taints)."""

    api_version: str = TAINTS_API_VERSION
    kind: Literal["ClusterTaints"] = "ClusterTaints"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterTaintsSpec = Field(default_factory=ClusterTaintsSpec)
