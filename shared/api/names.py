"""The Kubernetes API server's rules for names and labels, and how fleetplace keeps the names and
label values it derives within them.

Checks (what the API server's object-metadata validation applies to custom resources):

- `metadata.name`: a DNS-1123 subdomain: at most 253 characters of lowercase letters, digits,
  `-` and `.`, each dot-separated part beginning and ending with a letter or digit;
- `metadata.namespace`: a DNS-1123 label: at most 63 characters of lowercase letters, digits and
  `-`, beginning and ending with a letter or digit;
- label and annotation keys: a qualified name, `[prefix/]name`, the prefix a DNS-1123 subdomain,
  the name at most 63 characters of letters, digits, `-`, `_` and `.`, beginning and ending with a
  letter or digit;
- label values: empty, or at most 63 characters like a qualified name's name part.

Derived values (docs/names.md): a label value made from a name (the placement label, SIG-MC's
decision-key) is the name when it is a valid label value, else its first 52 characters and `-`
and 10 hex digits of the SHA-256 of the whole name; an object name made of a base and a suffix
(`<placement>-decision-<k>`, `<placement>-<index>`) keeps the base when the whole fits in 253
characters, else shortens the base the same way. Both depend on the name only, so they are the
same at every re-evaluation and on every instance.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

__all__ = [
    "DNS1123_LABEL_MAX",
    "DNS1123_SUBDOMAIN_MAX",
    "LABEL_VALUE_MAX",
    "derived_label_value",
    "derived_object_name",
    "dns1123_label_problem",
    "dns1123_subdomain_problem",
    "label_value_problem",
    "metadata_problems",
    "qualified_name_problem",
]

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63
# shortened values: the head, a dash, then this many hex digits of the name's SHA-256
DIGEST_LENGTH = 10
_LABEL_HEAD = LABEL_VALUE_MAX - DIGEST_LENGTH - 1  # 52

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def dns1123_label_problem(value: str) -> str | None:
    """Why `value` is not a DNS-1123 label (a namespace), or None."""
    if len(value) > DNS1123_LABEL_MAX:
        return f"must be no more than {DNS1123_LABEL_MAX} characters"
    if not _DNS1123_LABEL.fullmatch(value):
        return (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
    return None


def dns1123_subdomain_problem(value: str) -> str | None:
    """Why `value` is not a DNS-1123 subdomain (an object name), or None."""
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return None


def qualified_name_problem(value: str) -> str | None:
    """Why `value` is not a qualified name (a label or annotation key), or None."""
    if value.count("/") > 1:
        return "a qualified name may contain at most one '/'"
    prefix, slash, name = value.partition("/")
    if not slash:
        prefix, name = "", value
    elif not prefix:
        return "prefix part must be non-empty"
    else:
        problem = dns1123_subdomain_problem(prefix)
        if problem is not None:
            return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > QUALIFIED_NAME_MAX:
        return f"name part must be no more than {QUALIFIED_NAME_MAX} characters"
    if not _QUALIFIED_NAME.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character"
        )
    return None


def label_value_problem(value: str) -> str | None:
    """Why `value` is not a valid label value, or None."""
    if len(value) > LABEL_VALUE_MAX:
        return f"must be no more than {LABEL_VALUE_MAX} characters"
    if not _LABEL_VALUE.fullmatch(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return None


def metadata_problems(meta: Mapping[str, object], *, namespaced: bool | None) -> list[tuple[str, str]]:
    """The (field, reason) pairs the API server would report for an object's metadata: the name,
    the namespace (`namespaced`: required when True, refused when False, checked when present if
    None), label keys and values, annotation keys."""
    problems: list[tuple[str, str]] = []
    name = meta.get("name")
    if isinstance(name, str) and name:
        problem = dns1123_subdomain_problem(name)
        if problem is not None:
            problems.append(("metadata.name", f"Invalid value: {name!r}: {problem}"))
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        if namespaced is False:
            problems.append(("metadata.namespace", "not allowed on a cluster-scoped kind"))
        else:
            problem = dns1123_label_problem(namespace)
            if problem is not None:
                problems.append(("metadata.namespace", f"Invalid value: {namespace!r}: {problem}"))
    for field in ("labels", "annotations"):
        entries = meta.get(field)
        if entries is None:
            continue
        if not isinstance(entries, Mapping):
            problems.append((f"metadata.{field}", "must be a map of strings"))
            continue
        for key, value in entries.items():
            # the API server checks annotation keys in lower case, label keys as written
            checked = key.lower() if isinstance(key, str) and field == "annotations" else key
            key_problem = qualified_name_problem(checked) if isinstance(checked, str) else "must be a string"
            if key_problem is not None:
                problems.append((f"metadata.{field}", f"Invalid value: {key!r}: {key_problem}"))
            if not isinstance(value, str):
                problems.append((f"metadata.{field}[{key}]", "must be a string"))
            elif field == "labels":
                value_problem = label_value_problem(value)
                if value_problem is not None:
                    problems.append((f"metadata.labels[{key}]", f"Invalid value: {value!r}: {value_problem}"))
    return problems


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:DIGEST_LENGTH]


def derived_label_value(name: str) -> str:
    """A label value standing for `name`: the name itself when it is a valid label value, else
    its first 52 characters (characters a label value cannot hold replaced by `-`, and trimmed
    to begin and end with a letter or digit), `-` and a digest of the whole name."""
    if label_value_problem(name) is None:
        return name
    head = re.sub(r"[^-A-Za-z0-9_.]", "-", name[:_LABEL_HEAD]).strip("-_.")
    return f"{head}-{_digest(name)}" if head else _digest(name)


def derived_object_name(base: str, suffix: str) -> str:
    """`base + suffix` when that fits a DNS-1123 subdomain's 253 characters, else the base cut so
    that `<cut base>-<digest of base><suffix>` fits, its cut end trimmed to a letter or digit.
    `suffix` is lowercase and begins with `-` (`-decision-3`, `-0`)."""
    whole = base + suffix
    if len(whole) <= DNS1123_SUBDOMAIN_MAX:
        return whole
    room = DNS1123_SUBDOMAIN_MAX - len(suffix) - DIGEST_LENGTH - 1
    head = base[:room].rstrip("-.")
    return f"{head}-{_digest(base)}{suffix}" if head else f"{_digest(base)}{suffix}"
