"""cel-go's ``strings`` extension (latest version): indices are code points, not bytes."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from fleetplace.shared.placement._cel.library import Frame, function, size_cost
from fleetplace.shared.placement._cel.operators import no_overload
from fleetplace.shared.placement._cel.stdlib import to_string_value
from fleetplace.shared.placement._cel.values import CelEvalError, CelType, Uint

# Go's unicode.IsSpace (what strings.TrimSpace trims)
_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _str(name: str, *values: Any) -> None:
    for v in values:
        if type(v) is not str:
            no_overload(name, *values)


def _int(name: str, *values: Any) -> None:
    for v in values:
        if type(v) is not int:
            no_overload(name, *values)


@function("charAt", "(string, int) -> string", member=True)
def char_at(frame: Frame, s: Any, i: Any) -> str:
    _str("charAt", s)
    _int("charAt", i)
    if i < 0 or i > len(s):
        raise CelEvalError(f"index out of range: {i}")
    return s[i] if i < len(s) else ""


def _index_of(frame: Frame, s: Any, sub: Any, offset: int) -> int:
    if offset < 0 or offset > len(s):
        raise CelEvalError(f"index out of range: {offset}")
    frame.charge(size_cost(len(s)))
    return s.find(sub, offset)  # type: ignore[no-any-return]


def _last_index_of(frame: Frame, s: Any, sub: Any, offset: int) -> int:
    if offset < 0 or offset > len(s):
        raise CelEvalError(f"index out of range: {offset}")
    frame.charge(size_cost(len(s)))
    return s.rfind(sub, 0, offset + len(sub))  # type: ignore[no-any-return]


def index_of_string(frame: Frame, s: Any, sub: Any, offset: Any = 0) -> int:
    _str("indexOf", s, sub)
    _int("indexOf", offset)
    return _index_of(frame, s, sub, offset)


def last_index_of_string(frame: Frame, s: Any, sub: Any, offset: Any = None) -> int:
    _str("lastIndexOf", s, sub)
    if offset is None:
        offset = len(s)
    _int("lastIndexOf", offset)
    return _last_index_of(frame, s, sub, offset)


@function("indexOf", "(string, string, int) -> int", member=True)
def index_of_offset(frame: Frame, s: Any, sub: Any, offset: Any) -> int:
    return index_of_string(frame, s, sub, offset)


@function("lastIndexOf", "(string, string, int) -> int", member=True)
def last_index_of_offset(frame: Frame, s: Any, sub: Any, offset: Any) -> int:
    return last_index_of_string(frame, s, sub, offset)


@function("lowerAscii", "(string) -> string", member=True)
def lower_ascii(frame: Frame, s: Any) -> str:
    _str("lowerAscii", s)
    frame.charge(size_cost(len(s)))
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


@function("upperAscii", "(string) -> string", member=True)
def upper_ascii(frame: Frame, s: Any) -> str:
    _str("upperAscii", s)
    frame.charge(size_cost(len(s)))
    return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in s)


def _replace(frame: Frame, s: Any, old: Any, new: Any, n: int) -> str:
    _str("replace", s, old, new)
    count = s.count(old) if old else len(s) + 1
    if n >= 0:
        count = min(count, n)
    # charge for the result before building it, so a huge replacement cannot exhaust memory
    frame.charge(size_cost(len(s) + count * max(0, len(new) - len(old))))
    return s.replace(old, new, n)  # type: ignore[no-any-return]


@function("replace", "(string, string, string) -> string", member=True)
def replace_all(frame: Frame, s: Any, old: Any, new: Any) -> str:
    return _replace(frame, s, old, new, -1)


@function("replace", "(string, string, string, int) -> string", member=True)
def replace_n(frame: Frame, s: Any, old: Any, new: Any, n: Any) -> str:
    _int("replace", n)
    return _replace(frame, s, old, new, n)


def _split(frame: Frame, s: Any, sep: Any, n: int) -> list[str]:
    _str("split", s, sep)
    frame.charge(size_cost(len(s)))
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        if 0 < n < len(chars):
            return [*chars[: n - 1], "".join(chars[n - 1 :])]
        return chars
    return s.split(sep, n - 1 if n > 0 else -1)  # type: ignore[no-any-return]


@function("split", "(string, string) -> list", member=True)
def split_all(frame: Frame, s: Any, sep: Any) -> list[str]:
    return _split(frame, s, sep, -1)


@function("split", "(string, string, int) -> list", member=True)
def split_n(frame: Frame, s: Any, sep: Any, n: Any) -> list[str]:
    _int("split", n)
    return _split(frame, s, sep, n)


def _substring(s: Any, start: int, end: int) -> str:
    if start < 0 or start > len(s):
        raise CelEvalError(f"index out of range: {start}")
    if end < 0 or end > len(s):
        raise CelEvalError(f"index out of range: {end}")
    if start > end:
        raise CelEvalError(f"invalid substring range. start: {start}, end: {end}")
    return s[start:end]  # type: ignore[no-any-return]


@function("substring", "(string, int) -> string", member=True)
def substring_from(frame: Frame, s: Any, start: Any) -> str:
    _str("substring", s)
    _int("substring", start)
    return _substring(s, start, len(s))


@function("substring", "(string, int, int) -> string", member=True)
def substring_range(frame: Frame, s: Any, start: Any, end: Any) -> str:
    _str("substring", s)
    _int("substring", start, end)
    return _substring(s, start, end)


@function("trim", "(string) -> string", member=True)
def trim(frame: Frame, s: Any) -> str:
    _str("trim", s)
    return s.strip(_GO_SPACE)  # type: ignore[no-any-return]


def _join(frame: Frame, items: Any, sep: str) -> str:
    if type(items) not in (list, tuple):
        no_overload("join", items)
    for item in items:
        if type(item) is not str:
            raise CelEvalError("join: list elements must be strings")
    frame.charge(size_cost(sum(len(x) for x in items) + len(sep) * max(0, len(items) - 1)))
    return sep.join(items)


@function("join", "(list) -> string", member=True)
def join_plain(frame: Frame, items: Any) -> str:
    return _join(frame, items, "")


@function("join", "(list, string) -> string", member=True)
def join_sep(frame: Frame, items: Any, sep: Any) -> str:
    _str("join", sep)
    return _join(frame, items, sep)


def quote_string(s: str) -> str:
    out = ['"']
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c in "\a\b\f\n\r\t\v":
            out.append(
                {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}[c]
            )
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


@function("strings.quote", "(string) -> string")
def strings_quote(frame: Frame, s: Any) -> str:
    _str("strings.quote", s)
    frame.charge(size_cost(len(s)))
    return quote_string(s)


@function("reverse", "(string) -> string", member=True)
def reverse(frame: Frame, s: Any) -> str:
    _str("reverse", s)
    frame.charge(size_cost(len(s)))
    return s[::-1]  # type: ignore[no-any-return]


# -- format ---------------------------------------------------------------------------------------


def _format_value_s(v: Any) -> str:
    """``%s``: like ``string(v)``, and lists/maps rendered element by element."""
    t = type(v)
    if t is list or t is tuple:
        return "[" + ", ".join(_format_value_s(x) for x in v) + "]"
    if isinstance(v, Mapping):
        items = sorted(((_format_value_s(k), _format_value_s(x)) for k, x in v.items()), key=lambda kv: kv[0])
        return "{" + ", ".join(f"{k}: {x}" for k, x in items) + "}"
    if v is None:
        return "null"
    if t is CelType:
        return str(v.name)
    if t is str:
        return v  # type: ignore[no-any-return]
    return to_string_value(v)


def _format_fixed(v: Any, precision: int, verb: str) -> str:
    if type(v) in (int, Uint):
        v = float(v)
    if type(v) is not float:
        raise CelEvalError(
            f"error during formatting: fixed-point clause can only be used on numbers, was given {v!r}"
        )
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return f"{v:.{precision}{verb}}"


def _format_one(verb: str, precision: int | None, v: Any) -> str:
    t = type(v)
    if verb == "s":
        return _format_value_s(v)
    if verb == "d":
        if t not in (int, Uint):
            raise CelEvalError(
                f"error during formatting: decimal clause can only be used on integers, was given {v!r}"
            )
        return str(int(v))
    if verb == "f":
        return _format_fixed(v, 6 if precision is None else precision, "f")
    if verb == "e":
        return _format_fixed(v, 6 if precision is None else precision, "e")
    if verb in "xX":
        if t in (int, Uint):
            text = format(int(v), "x")
        elif t is str:
            text = v.encode("utf-8").hex()
        elif t is bytes:
            text = v.hex()
        else:
            raise CelEvalError(
                "error during formatting: only integers, byte buffers, and strings can be formatted as hex"
            )
        return text.upper() if verb == "X" else text
    if verb == "o":
        if t not in (int, Uint):
            raise CelEvalError("error during formatting: octal clause can only be used on integers")
        return format(int(v), "o")
    if verb == "b":
        if t is bool:
            return "1" if v else "0"
        if t not in (int, Uint):
            raise CelEvalError("error during formatting: only integers and bools can be formatted as binary")
        return format(int(v), "b")
    raise CelEvalError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')


@function("format", "(string, list) -> string", member=True)
def format_string(frame: Frame, fmt: Any, args: Any) -> str:
    _str("format", fmt)
    if type(args) not in (list, tuple):
        no_overload("format", fmt, args)
    out: list[str] = []
    i, arg_index, n = 0, 0, len(fmt)
    while i < n:
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        i += 1
        if i < n and fmt[i] == "%":
            out.append("%")
            i += 1
            continue
        precision: int | None = None
        if i < n and fmt[i] == ".":
            j = i + 1
            while j < n and fmt[j].isdigit():
                j += 1
            precision = int(fmt[i + 1 : j] or "0")
            i = j
        if i >= n:
            raise CelEvalError("could not parse formatting clause: unexpected end of string")
        if arg_index >= len(args):
            raise CelEvalError(f"index {arg_index} out of range")
        out.append(_format_one(fmt[i], precision, args[arg_index]))
        arg_index += 1
        i += 1
        frame.charge(size_cost(len(out[-1])))
    return "".join(out)
