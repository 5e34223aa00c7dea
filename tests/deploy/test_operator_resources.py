"""The resources the chart renders for other projects' operators match those projects' schemas:
KEDA's ScaledObject and the Prometheus Operator's PodMonitor against the CRDs of their published
Go modules (tests/deploy/crds.py); Strimzi's KafkaUser and KafkaTopic against the fields of
Strimzi's v1 API, as its published Java model (io.strimzi:api 0.49.0 on Maven Central) declares
them, since no registry here carries Strimzi's CRD files."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from tests.deploy import chart, crds
from tests.deploy.chart import of_kind, render


@pytest.fixture(scope="module", autouse=True)
def _helm() -> Iterator[None]:
    chart.build_helm()
    yield


@pytest.fixture(scope="module")
def everything() -> list[dict[str, Any]]:
    return render(["all-optional-values.yaml"]) + render(["strimzi-scram-values.yaml"])


def _strict(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_METADATA = {"type": "object"}
_OPERATIONS = [
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "ClusterAction",
    "AlterConfigs",
    "DescribeConfigs",
    "IdempotentWrite",
    "All",
]
# KafkaUserSpec: authentication, authorization, quotas, template; AclRule in v1: type, resource,
# host, operations (the singular `operation` is served only by v1alpha1-v1beta2).
KAFKA_USER_V1 = _strict(
    {
        "apiVersion": {"const": "kafka.strimzi.io/v1"},
        "kind": {"const": "KafkaUser"},
        "metadata": _METADATA,
        "spec": _strict(
            {
                "authentication": _strict(
                    {"type": {"enum": ["tls", "tls-external", "scram-sha-512"]}}, ("type",)
                ),
                "authorization": _strict(
                    {
                        "type": {"const": "simple"},
                        "acls": {
                            "type": "array",
                            "items": _strict(
                                {
                                    "type": {"enum": ["allow", "deny"]},
                                    "resource": _strict(
                                        {
                                            "type": {
                                                "enum": ["topic", "group", "cluster", "transactionalId"]
                                            },
                                            "name": {"type": "string"},
                                            "patternType": {"enum": ["literal", "prefix"]},
                                        },
                                        ("type",),
                                    ),
                                    "host": {"type": "string"},
                                    "operations": {
                                        "type": "array",
                                        "minItems": 1,
                                        "items": {"enum": _OPERATIONS},
                                    },
                                },
                                ("resource", "operations"),
                            ),
                        },
                    },
                    ("type", "acls"),
                ),
                "quotas": {"type": "object"},
                "template": {"type": "object"},
            }
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)
# KafkaTopicSpec: topicName, partitions, replicas, config.
KAFKA_TOPIC_V1 = _strict(
    {
        "apiVersion": {"const": "kafka.strimzi.io/v1"},
        "kind": {"const": "KafkaTopic"},
        "metadata": _METADATA,
        "spec": _strict(
            {
                "topicName": {"type": "string"},
                "partitions": {"type": "integer", "minimum": 1},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 32767},
                "config": {
                    "type": "object",
                    "additionalProperties": {"type": ["string", "number", "boolean"]},
                },
            }
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)


@pytest.mark.parametrize("kind", sorted(crds.CRDS))
def test_rendered_resources_validate_against_their_projects_crd(
    kind: str, everything: list[dict[str, Any]]
) -> None:
    objects = of_kind(everything, kind)
    assert objects
    for obj in objects:
        group, version = obj["apiVersion"].split("/")
        assert crds.crd(kind)["spec"]["group"] == group
        jsonschema.validate(obj, crds.schema(kind, version))


def test_a_scaled_object_with_a_misspelt_field_fails_the_crd_schema(everything: list[dict[str, Any]]) -> None:
    (scaled,) = of_kind(everything, "ScaledObject")
    broken = {**scaled, "spec": {**scaled["spec"], "maxReplicaCount": "twelve"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, crds.schema("ScaledObject", "v1alpha1"))


@pytest.mark.parametrize(("kind", "schema"), [("KafkaUser", KAFKA_USER_V1), ("KafkaTopic", KAFKA_TOPIC_V1)])
def test_strimzi_resources_use_only_v1_fields(
    kind: str, schema: dict[str, Any], everything: list[dict[str, Any]]
) -> None:
    objects = of_kind(everything, kind)
    assert objects
    for obj in objects:
        jsonschema.validate(obj, schema)
        assert obj["metadata"]["labels"]["strimzi.io/cluster"]


def test_the_singular_acl_operation_of_older_strimzi_apis_is_refused() -> None:
    user = {
        "apiVersion": "kafka.strimzi.io/v1",
        "kind": "KafkaUser",
        "metadata": {"name": "u"},
        "spec": {
            "authorization": {
                "type": "simple",
                "acls": [{"resource": {"type": "topic", "name": "t"}, "operation": "Read"}],
            }
        },
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(user, KAFKA_USER_V1)
