"""What a person reads when something does not validate or decode: the one place that says it.

pydantic's errors are written for Python programmers ("Value error, …", "String should have at
least 1 character", "Input should be a valid integer"); every message a command prints or a
dead-letter record carries for a validation error goes through `plain` instead, so the same rule
reads the same everywhere. Bytes that are not UTF-8 are said by the byte they break at
(`not_utf8`), not by a codec's repr.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

__all__ = ["located", "not_utf8", "plain", "problems", "text_of"]

# errors with a phrase of their own; the rest are read from pydantic's sentence below
_PHRASES: Mapping[str, str] = {
    "missing": "required",
    "extra_forbidden": "unknown field",
    "int_parsing": "not a valid integer",
    "int_from_float": "not a whole number",
    "float_parsing": "not a valid number",
    "bool_parsing": "not a valid boolean (true or false)",
    "json_invalid": "not valid JSON",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
}
# "Input should be …", "String should have …", "List should have …": the rule, said as one
_SHOULD = re.compile(r"^(?:Input|String|List|Value|Dictionary|Tuple|Set|Decimal|Object) should ")
# pydantic's own lead before a validator's message
_LEADS = ("Value error, ", "Assertion failed, ")


def _count(n: object, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def plain(error: Mapping[str, Any]) -> str:
    """One pydantic error (an item of `ValidationError.errors()`) in plain words, without its
    location: `must not be empty`, `required`, a validator's own message."""
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    if kind in ("value_error", "assertion_error") and ctx.get("error") is not None:
        return str(ctx["error"])
    if kind == "string_too_short":
        least = ctx.get("min_length", 1)
        return "must not be empty" if least == 1 else f"must have at least {_count(least, 'character')}"
    if kind == "string_too_long":
        return f"must have at most {_count(ctx.get('max_length'), 'character')}"
    if kind == "too_short":
        least = ctx.get("min_length", 1)
        return "must not be empty" if least == 1 else f"must have at least {_count(least, 'item')}"
    if kind == "too_long":
        return f"must have at most {_count(ctx.get('max_length'), 'item')}"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx.get('pattern')!r}"
    phrase = _PHRASES.get(kind)
    if phrase is not None:
        return phrase
    message = str(error.get("msg", ""))
    for lead in _LEADS:
        if message.startswith(lead):
            return message[len(lead) :]
    return _SHOULD.sub("must ", message)


def _path(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("function-"):  # a validator's own name, not a field
            continue
        else:
            out += ("." if out else "") + part
    return out


def located(error: Mapping[str, Any]) -> str:
    """`spec.weight: must be less than or equal to 10`: the field path, then `plain`."""
    path = _path(error.get("loc") or ())
    return f"{path}: {plain(error)}" if path else plain(error)


def problems(exc: ValidationError) -> str:
    """Every error of `exc`, located and in plain words, separated by `; `."""
    return "; ".join(located(e) for e in exc.errors(include_url=False))


def not_utf8(data: bytes | bytearray | memoryview) -> str | None:
    """`not UTF-8 at byte 3` for bytes that do not decode, else None."""
    try:
        bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 at byte {e.start}"
    return None


def text_of(body: bytes, limit: int = 200) -> str:
    """An HTTP body as a person reads it: text (undecodable bytes replaced), trimmed, at most
    `limit` characters, `(empty)` when there is nothing."""
    text = body.decode("utf-8", "replace").strip()
    if not text:
        return "(empty)"
    return text if len(text) <= limit else text[: limit - 1] + "…"
