"""The explorer's templates (services/explorer/templates): Jinja2 with autoescaping on for every
template, so a value is escaped unless a template says otherwise — no hand-called escaping.

`render` gives a template's HTML as `Markup`; `macro` calls one macro of a template (a piece a
test renders alone). Filters and globals are the few helpers the templates share: URLs, times
as every page shows them, decision group labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from fleetplace.services.rollout.listing import group_label, to_the_second


def placement_url(key: str, seq: int | None = None) -> str:
    namespace, _, name = key.partition("/")
    url = f"/placements/{quote(namespace, safe='')}/{quote(name, safe='')}"
    return url if seq is None else f"{url}?seq={seq}#explanation"


def rollout_url(key: str) -> str:
    namespace, _, name = key.partition("/")
    return f"/rollouts/{quote(namespace, safe='')}/{quote(name, safe='')}"


def iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def when(text: str | None) -> str:
    """A time as every page shows it: RFC 3339 in UTC to the second, whatever precision the
    record carries (a `<time datetime>` keeps the exact value)."""
    return to_the_second(text) if text else "—"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def query(params: Mapping[str, Any], key: str | None = None, value: object = None, **more: object) -> str:
    """`params` as a query string, with `key` set to `value` and `more` added."""
    merged: dict[str, Any] = dict(params)
    if key is not None:
        merged[key] = value
    merged.update(more)
    return urlencode(merged)


def _quote(value: object, safe: str = "/") -> str:
    return quote(str(value), safe=safe)


ENV = Environment(
    loader=PackageLoader("fleetplace.services.explorer", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.filters.update(placement_url=placement_url, rollout_url=rollout_url, when=when, iso=iso, quote=_quote)
ENV.globals.update(group_label=group_label, plural=plural, query=query)


def render(template: str, **context: Any) -> Markup:
    return Markup(ENV.get_template(template).render(**context))


def macro(template: str, name: str, *args: Any) -> Markup:
    return Markup(getattr(ENV.get_template(template).module, name)(*args))
