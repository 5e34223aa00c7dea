"""`fleetplace taint CLUSTER key[=value]:Effect`: put a taint on, or take it off, the taints topic.

The taints topic holds one taint set per cluster (docs/topics.md#taints). The command reads the
cluster's current set, adds or removes the taint, and publishes the whole new set, as a taint
owner (a health checker, an operator) would. `kubectl taint` spells it the same way, including a
trailing `-` to remove.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from fleetplace.services.commands.bus import _connection, _fail, publish_records
from fleetplace.services.commands.output import Bootstrap, Prefix, paragraphs
from fleetplace.shared.api.admission import admit
from fleetplace.shared.api.objects import ObjectError
from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.publish import PlannedRecord, to_outgoing
from fleetplace.shared.bus.topics import TAINTS, Topics
from fleetplace.shared.settings import KafkaSettings

__all__ = ["TaintChange", "apply_change", "parse_taint", "register"]

_EFFECTS = ("NoSelect", "PreferNoSelect", "NoSelectIfNew")


@dataclass(frozen=True, slots=True)
class TaintChange:
    """One taint to put on (`remove` False) or take off; a removal without an effect takes off
    every taint with the key."""

    key: str
    value: str | None
    effect: str | None
    remove: bool


def parse_taint(text: str, remove: bool = False) -> TaintChange:
    """`key[=value]:Effect`, or for a removal `key[:Effect]` (a trailing `-` also means removal)."""
    if text.endswith("-"):
        text, remove = text[:-1], True
    head, colon, effect = text.rpartition(":")
    if not colon:
        head, effect = text, ""
    key, equals, value = head.partition("=")
    if not key:
        raise ValueError(f"{text!r}: expected key[=value]:Effect")
    if effect and effect not in _EFFECTS:
        raise ValueError(f"{text!r}: effect {effect!r} is not one of {', '.join(_EFFECTS)}")
    if not effect and not remove:
        raise ValueError(f"{text!r}: expected key[=value]:Effect (Effect: {', '.join(_EFFECTS)})")
    return TaintChange(key, value if equals else None, effect or None, remove)


def apply_change(
    taints: Sequence[Mapping[str, Any]], change: TaintChange, now: datetime
) -> list[dict[str, Any]]:
    """The new taint set. A taint is identified by key and effect: adding one replaces the old
    one with that key and effect, keeping its timeAdded when the value is unchanged (a toleration's
    seconds count from timeAdded)."""
    kept: list[dict[str, Any]] = []
    previous: Mapping[str, Any] | None = None
    for taint in taints:
        same_key = taint.get("key") == change.key
        same = same_key and (change.effect is None or taint.get("effect") == change.effect)
        if same and change.remove and (change.value is None or taint.get("value", "") == change.value):
            continue
        if same and not change.remove:
            previous = taint
            continue
        kept.append(dict(taint))
    if change.remove:
        return kept
    added: dict[str, Any] = {"key": change.key}
    if change.value:
        added["value"] = change.value
    added["effect"] = change.effect
    keep_time = previous is not None and previous.get("value", "") == (change.value or "")
    if keep_time and previous is not None and previous.get("timeAdded"):
        added["timeAdded"] = previous["timeAdded"]
    else:
        added["timeAdded"] = now.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    return [*kept, added]


async def current_taints(kafka: KafkaSettings, topics: Topics, cluster: str) -> list[dict[str, Any]]:
    """The cluster's taint set as the topic holds it now (the last record for its key)."""
    current: dict[str, Any] | None = None
    async with BroadcastReader(kafka, [topics.name(TAINTS)]) as reader:
        while True:
            batch = await reader.poll()
            for record in batch.records:
                if record.key == cluster:
                    current = decode_object(record.value)
            if batch.caught_up:
                break
    taints = current.get("taints") if current else None
    return [t for t in taints if isinstance(t, dict)] if isinstance(taints, list) else []


def register(app: typer.Typer) -> None:
    @app.command(
        help=paragraphs("""Put taints on a cluster (or take them off) through the taints topic.

        Reads the cluster's current taint set from the topic, changes it and publishes the whole
        new set, e.g. `fleetplace taint east-1 maintenance=true:NoSelect`. Effects: NoSelect,
        PreferNoSelect, NoSelectIfNew. The ManagedCluster's own spec.taints are not touched.""")
    )
    def taint(
        cluster: Annotated[str, typer.Argument(metavar="CLUSTER", help="The ManagedCluster's name.")],
        taints: Annotated[
            list[str],
            typer.Argument(
                metavar="KEY[=VALUE]:EFFECT",
                help="Taints to put on; KEY[:EFFECT]- (or --remove) takes them off.",
            ),
        ],
        remove: Annotated[bool, typer.Option("--remove", help="Take the taints off.")] = False,
        bootstrap: Bootstrap = None,
        prefix: Prefix = None,
    ) -> None:
        try:
            changes = [parse_taint(text, remove) for text in taints]
        except ValueError as exc:
            raise _fail(str(exc), 2) from None
        _, kafka, topics = _connection(bootstrap, prefix)

        async def run() -> list[dict[str, Any]]:
            current: list[dict[str, Any]] = await current_taints(kafka, topics, cluster)
            now = datetime.now(UTC)
            for change in changes:
                current = apply_change(current, change, now)
            body = {"kind": "ClusterTaints", "metadata": {"name": cluster}, "spec": {"taints": current}}
            admit(body, f"taint {cluster}")
            planned = [PlannedRecord(f"taint {cluster}", TAINTS, cluster, {"taints": current})]
            await publish_records(kafka, to_outgoing(planned, topics), topics)
            return current

        try:
            result = asyncio.run(run())
        except ObjectError as exc:
            raise _fail(str(exc), 2) from None
        except BusError as exc:
            raise _fail(str(exc)) from None
        shown = ", ".join(
            f"{t['key']}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}" for t in result
        )
        typer.echo(f"{cluster}: taints {shown or '(none)'}")
