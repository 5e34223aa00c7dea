"""`fleetplace docs asyncapi`: the topic contracts as an AsyncAPI 3.0 document.

Generated from the topic catalogue (`fleetplace.shared.bus.topics`) and the payload models
(`fleetplace.shared.api.decisions`, `fleetplace.shared.api.ocm`, `fleetplace.shared.api.queues`), so the document cannot drift
from the code: `docs/asyncapi.yaml` is this command's output, and a test fails when it is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from fleetplace.shared.api._decision_schema import DecisionDiff  # the record type's schema view
from fleetplace.shared.api.cluster_profiles import ClusterProfile
from fleetplace.shared.api.decisions import (
    SCHEMA_VERSION,
    AppPlacementRecord,
    ClockRecord,
    DeadLetterRecord,
    PlacementDecisions,
    TaintSetRecord,
)
from fleetplace.shared.api.ocm import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    Placement,
)
from fleetplace.shared.api.queues import ApplicationSubmission, PartitionConfig
from fleetplace.shared.api.rollouts import Rollout, RolloutDiff, RolloutState, RolloutStatusReport
from fleetplace.shared.api.score_sources import ScoreSource, ScoreSourceStatus
from fleetplace.shared.api.sigmc import SigmcPlacementDecision
from fleetplace.shared.bus.topics import CATALOGUE, DEFAULT_PREFIX, TopicKind, TopicSpec

BINDING_VERSION = "0.5.0"

PAYLOADS: dict[str, type[BaseModel]] = {
    "clusters": ManagedCluster,
    "cluster-profiles": ClusterProfile,
    "taints": TaintSetRecord,
    "scores": AddOnPlacementScore,
    "clustersets": ManagedClusterSet,
    "clustersetbindings": ManagedClusterSetBinding,
    "placements": Placement,
    "decisions": DecisionDiff,
    "placement-decisions": PlacementDecisions,
    "sigmc-placement-decisions": SigmcPlacementDecision,
    "queue-configs": PartitionConfig,
    "applications": ApplicationSubmission,
    "app-placements": AppPlacementRecord,
    "deadletter": DeadLetterRecord,
    "clock": ClockRecord,
    "rollouts": Rollout,
    "rollout-status": RolloutStatusReport,
    "rollout-decisions": RolloutDiff,
    "rollout-state": RolloutState,
    "score-sources": ScoreSource,
    "score-source-status": ScoreSourceStatus,
}

DESCRIPTIONS: dict[str, str] = {
    "clusters": "ManagedCluster objects as OCM has them. A tombstone deletes the cluster.",
    "cluster-profiles": (
        "SIG-Multicluster ClusterProfile objects (multicluster.x-k8s.io v1alpha1): a cluster "
        "source beside clusters, read as the ManagedCluster of docs/cluster-inventory.md's mapping."
    ),
    "taints": "Taint sets published by taint owners (health checkers, operators), merged with spec.taints.",
    "scores": "AddOnPlacementScore objects, keyed by the cluster namespace and the resource name.",
    "clustersets": "ManagedClusterSet objects.",
    "clustersetbindings": "ManagedClusterSetBinding objects.",
    "placements": "Placement objects; partitioned across scheduler instances (consumer group).",
    "decisions": (
        "One DecisionDiff per change of a placement's decision: the audit history (never compacted). "
        "Co-partitioned with placements."
    ),
    "placement-decisions": (
        "The current decision only, as OCM PlacementDecision pages (compacted; a tombstone when the "
        "placement is deleted). What Argo CD-style consumers read."
    ),
    "sigmc-placement-decisions": (
        "The current decision as SIG-Multicluster PlacementDecision slices (KEP-5313, "
        "multicluster.x-k8s.io/v1alpha1), at most 100 decisions each with their reason, one record "
        "per slice (compacted; a tombstone for a slice no longer needed). Not co-partitioned."
    ),
    "queue-configs": "YuniKorn partition configs (queues and placement rules), keyed by partition name.",
    "applications": "Application submissions to place into queues.",
    "app-placements": "The queue placement of each application, or its rejection.",
    "deadletter": "Records a worker could not use, whole, with the reason.",
    "clock": "The time for workers started with --clock topic (tests, replays, what-if runs).",
    "rollouts": "Rollout objects (fleetplace.dev/v1alpha1): a revision and one OCM RolloutStrategy per placement.",
    "rollout-status": (
        "One deployer report per (rollout, cluster). Produced to the partition of `<namespace>/<rollout>` "
        "(murmur2 of the rollout's key), not of the whole key; a misrouted report is dead-lettered."
    ),
    "rollout-decisions": (
        "One rollout diff per change of a rollout's answer: the clusters to roll out to now and what "
        "was added to and removed from them, timed out, removed, breach, next recheck, complete, "
        "inputs. The log (never compacted); the full listing is on rollout-state."
    ),
    "rollout-state": (
        "The current answer of each rollout, every cluster to roll out to with its status, soak end "
        "or deadline (compacted; a tombstone once the rollout is deleted)."
    ),
    "score-sources": (
        "ScoreSource objects (fleetplace.dev/v1alpha1): a PromQL query whose result the score worker "
        "publishes to scores as one AddOnPlacementScore per cluster. Split across score workers by key."
    ),
    "score-source-status": (
        "Where each score source stands: last evaluation, last success, last error, clusters scored "
        "(compacted; one record per evaluation; a tombstone once the source is deleted)."
    ),
}

# Who reads and who writes each topic (AsyncAPI operations, from fleetplace's side).
RECEIVERS: dict[str, tuple[str, ...]] = {
    "scheduler": (
        "clusters",
        "cluster-profiles",
        "taints",
        "scores",
        "clustersets",
        "clustersetbindings",
        "placements",
        "decisions",
        "clock",
    ),
    "queuePlacer": ("queue-configs", "applications"),
    "auditor": (
        "clusters",
        "cluster-profiles",
        "taints",
        "scores",
        "clustersets",
        "clustersetbindings",
        "placements",
        "decisions",
        "sigmc-placement-decisions",
    ),
    "subscriber": ("decisions", "placement-decisions", "sigmc-placement-decisions"),
    "rolloutWorker": ("placement-decisions", "rollouts", "rollout-status", "rollout-decisions", "clock"),
    "deployer": ("rollout-decisions", "rollout-state"),
    "scoreWorker": ("score-sources", "scores"),
}
SENDERS: dict[str, tuple[str, ...]] = {
    "scheduler": ("decisions", "placement-decisions", "sigmc-placement-decisions", "deadletter"),
    "queuePlacer": ("app-placements", "deadletter"),
    "rolloutWorker": ("rollout-decisions", "rollout-state", "deadletter"),
    "deployer": ("rollout-status",),
    "scoreWorker": ("scores", "score-source-status", "deadletter"),
}

KEY_PATTERNS = {
    "<namespace>/<name>": r"^[^/]+/[^/]+$",
    "<cluster namespace>/<name>": r"^[^/]+/[^/]+$",
    "<namespace>/<set name>": r"^[^/]+/[^/]+$",
    "<namespace>/<rollout>": r"^[^/]+/[^/]+$",
    "<namespace>/<slice name>": r"^[^/]+/[^/]+$",
    "<namespace>/<rollout>/<cluster>": r"^[^/]+/[^/]+/[^/]+$",
}


def _camel(name: str) -> str:
    head, *rest = name.split("-")
    return head + "".join(part.capitalize() for part in rest)


def _headers(output: bool) -> dict[str, Any]:
    """CloudEvents binary-mode headers (the Kafka protocol binding), as strings."""
    properties: dict[str, Any] = {
        "ce_specversion": {"type": "string", "const": "1.0"},
        "ce_id": {"type": "string", "description": "Unique per record."},
        "ce_type": {"type": "string", "examples": ["io.fleetplace.decisions"]},
        "ce_source": {
            "type": "string",
            "description": "The producing instance, e.g. fleetplace/scheduler (the auditor groups batches by it).",
        },
        "ce_time": {"type": "string", "format": "date-time"},
        "content-type": {"type": "string", "const": "application/json"},
        "ce_schemaversion": {"type": "string", "description": "Version of the payload schema."},
    }
    if output:
        properties["ce_resourceversion"] = {
            "type": "string",
            "description": "Monotonic per key (the seq of decisions), as OCM's CloudEvents protocol has it.",
        }
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if output:
        schema["required"] = ["ce_specversion", "ce_id", "ce_type", "ce_source", "ce_time", "content-type"]
    else:
        schema["description"] = (
            "Optional on inputs (the workers do not require them); `fleetplace publish` sets them."
        )
    return schema


def _channel_binding(spec: TopicSpec) -> dict[str, Any]:
    config: dict[str, Any] = {"cleanup.policy": ["compact" if spec.compacted else "delete"]}
    if "retention.ms" in spec.extra_config:
        config["retention.ms"] = int(spec.extra_config["retention.ms"])
    binding: dict[str, Any] = {"partitions": spec.partitions, "topicConfiguration": config}
    binding["bindingVersion"] = BINDING_VERSION
    return binding


def build_document() -> dict[str, Any]:
    """The AsyncAPI 3.0 document of every topic."""
    models = sorted(set(PAYLOADS.values()), key=lambda m: m.__name__)
    _, definitions = models_json_schema(
        [(m, "validation") for m in models], by_alias=True, ref_template="#/components/schemas/{model}"
    )
    schemas: dict[str, Any] = dict(sorted(definitions["$defs"].items()))
    schemas["CloudEventsHeaders"] = _headers(output=False)
    schemas["CloudEventsOutputHeaders"] = _headers(output=True)
    channels: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for spec in CATALOGUE:
        name = _camel(spec.name)
        model = PAYLOADS[spec.name]
        payload: dict[str, Any] = {"$ref": f"#/components/schemas/{model.__name__}"}
        tombstones = spec.kind is TopicKind.STATE or spec.name in (
            "placement-decisions",
            "sigmc-placement-decisions",
        )
        if tombstones:
            payload = {
                "oneOf": [payload, {"type": "null", "description": "A tombstone: the key is deleted."}]
            }
        key: dict[str, Any] = {"type": "string", "description": spec.key}
        if spec.key in KEY_PATTERNS:
            key["pattern"] = KEY_PATTERNS[spec.key]
        output = spec.kind is TopicKind.OUTPUT
        messages[name] = {
            "name": model.__name__,
            "title": f"{spec.name} record",
            "summary": DESCRIPTIONS[spec.name],
            "contentType": "application/json",
            "headers": {"$ref": f"#/components/schemas/CloudEvents{'Output' if output else ''}Headers"},
            "payload": payload,
            "bindings": {"kafka": {"key": key, "bindingVersion": BINDING_VERSION}},
        }
        channels[name] = {
            "address": "{prefix}" + spec.name,
            "title": spec.name,
            "description": f"{DESCRIPTIONS[spec.name]} Kind: {spec.kind.value}.",
            "parameters": {"prefix": {"$ref": "#/components/parameters/prefix"}},
            "messages": {name: {"$ref": f"#/components/messages/{name}"}},
            "bindings": {"kafka": _channel_binding(spec)},
        }
    operations: dict[str, Any] = {}
    for action, table in (("receive", RECEIVERS), ("send", SENDERS)):
        for service, topics in table.items():
            for topic in topics:
                name = _camel(topic)
                operations[
                    f"{service}{'Receives' if action == 'receive' else 'Sends'}{name[0].upper()}{name[1:]}"
                ] = {
                    "action": action,
                    "channel": {"$ref": f"#/channels/{name}"},
                    "messages": [{"$ref": f"#/channels/{name}/messages/{name}"}],
                }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "fleetplace topics",
            "version": f"{SCHEMA_VERSION}.0.0",
            "description": (
                "Every topic fleetplace reads or writes: keys are UTF-8 strings, values JSON (or null, a "
                "tombstone), with CloudEvents binary-mode headers. Generated by `fleetplace docs asyncapi` "
                "from the payload models; do not edit by hand."
            ),
        },
        "defaultContentType": "application/json",
        "servers": {
            "kafka": {
                "host": "localhost:9092",
                "protocol": "kafka",
                "description": "Any Kafka-protocol broker: set KAFKA_BOOTSTRAP_SERVERS.",
            }
        },
        "channels": channels,
        "operations": operations,
        "components": {
            "parameters": {
                "prefix": {
                    "description": "The topic prefix (FLEETPLACE_TOPIC_PREFIX).",
                    "default": DEFAULT_PREFIX,
                }
            },
            "messages": messages,
            "schemas": schemas,
        },
    }


def render() -> str:
    header = "# Generated by `fleetplace docs asyncapi`: do not edit by hand.\n"
    return header + yaml.safe_dump(build_document(), sort_keys=False, allow_unicode=True, width=100)


def register(app: typer.Typer) -> None:
    docs_app = typer.Typer(help="Generated documentation.", no_args_is_help=True)
    app.add_typer(docs_app, name="docs")

    @docs_app.command("asyncapi")
    def asyncapi(
        output: Annotated[
            Path | None, typer.Option("--output", "-o", help="Write to FILE (default: stdout).")
        ] = None,
    ) -> None:
        """The AsyncAPI 3.0 document of every topic (channels, keys, payloads, headers)."""
        text = render()
        if output is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            output.write_text(text)
