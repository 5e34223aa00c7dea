"""Names, the patterns they must match, and Go's string helpers where Python differs.

Go's `regexp.MatchString` with `^…$` anchors the whole text, while Python's `$` also matches
before a trailing newline — so every check here is a `fullmatch` of the unanchored pattern.
"""

from __future__ import annotations

import re
from typing import Final

ROOT: Final = "root"
ROOT_PREFIX: Final = "root."
DEFAULT_QUEUE: Final = "root.default"
RECOVERY_NAME: Final = "@recovery@"
RECOVERY_QUEUE: Final = "root.@recovery@"
DOT_REPLACEMENT: Final = "_dot_"
FORCE_TAG: Final = "application.create.force"
RECOVERY_USER: Final = "nobody"
RECOVERY_GROUP: Final = "nogroup"

_QUEUE_NAME = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")
_RULE_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9_]*")
_USER_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9:#/_.@-]*[$]?")
_GROUP_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")
_ACL_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?")
_ACL_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9_-]*")
# any of ^ $ * + ? ( ) [ { } | turns a single filter entry into a regexp; `.` does not
_REGEXP_MARKER = re.compile(r"[\^$*+?()\[{}|]")

# unicode.IsSpace: what Go's strings.TrimSpace and strings.Fields treat as white space
_GO_SPACE_CHARS: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_GO_SPACE_RUN = re.compile(f"[{_GO_SPACE_CHARS}]+")

# Rules and the placer check the same user names, requested queues and tag values over and
# over: remember the answers (pure functions of the string; bounded, started over when full).
_MEMO_LIMIT = 1 << 16
_users: dict[str, bool] = {}


def is_queue_name(name: str) -> bool:
    return _QUEUE_NAME.fullmatch(name) is not None


def is_rule_name(name: str) -> bool:
    return _RULE_NAME.fullmatch(name) is not None


def is_user_name(name: str) -> bool:
    valid = _users.get(name)
    if valid is None:
        if len(_users) >= _MEMO_LIMIT:
            _users.clear()
        valid = _users[name] = _USER_NAME.fullmatch(name) is not None
    return valid


def is_group_name(name: str) -> bool:
    return _GROUP_NAME.fullmatch(name) is not None


def is_acl_user(name: str) -> bool:
    return _ACL_USER.fullmatch(name) is not None


def is_acl_group(name: str) -> bool:
    return _ACL_GROUP.fullmatch(name) is not None


def has_regexp_marker(entry: str) -> bool:
    return _REGEXP_MARKER.search(entry) is not None


def go_lower(text: str) -> str:
    """Go's `strings.ToLower`: rune by rune, so `İ` becomes `i`, not Python's `i̇` (two runes)."""
    if text.isascii():
        return text.lower()
    return text.replace("\u0130", "i").lower()


def go_trim_space(text: str) -> str:
    return text.strip(_GO_SPACE_CHARS)


def go_fields(text: str) -> list[str]:
    """Go's `strings.Fields`: split on runs of white space, no empty fields."""
    return [f for f in _GO_SPACE_RUN.split(text) if f]


def replace_dots(name: str) -> str:
    """Every dot becomes `_dot_`, literally and totally (`a..b` → `a_dot__dot_b`)."""
    return name.replace(".", DOT_REPLACEMENT)


def invalid_levels(path: str) -> list[str]:
    """The dot-separated parts of a path that are not valid queue names (empty parts included)."""
    return [part for part in path.split(".") if not is_queue_name(part)]


_levels: dict[str, str] = {}
_paths: dict[str, bool] = {}


def as_level(raw: str) -> str:
    """`raw` as one queue level (every dot replaced by `_dot_`), or "" when that is not a valid name."""
    level = _levels.get(raw)
    if level is None:
        if len(_levels) >= _MEMO_LIMIT:
            _levels.clear()
        name = replace_dots(raw)
        level = _levels[raw] = name if is_queue_name(name) else ""
    return level


def is_valid_path(path: str) -> bool:
    """Every dot-separated level of `path` is a valid queue name."""
    ok = _paths.get(path)
    if ok is None:
        if len(_paths) >= _MEMO_LIMIT:
            _paths.clear()
        ok = _paths[path] = not invalid_levels(path)
    return ok


def go_parse_bool(text: str) -> bool:
    """Go's `strconv.ParseBool` reading true; anything it cannot parse counts as false."""
    return text in ("1", "t", "T", "TRUE", "true", "True")
