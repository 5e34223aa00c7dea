"""The Kubernetes CEL libraries OCM enables: Lists, Regex, Quantity, Semver (base only), URLs and
IP/CIDR, declared as ``k8s.io/apiserver/pkg/cel/library`` of the Kubernetes version OCM vendors
(1.34) declares them: the same names, the same receiver or global style, the same overloads."""

from __future__ import annotations

import ipaddress
import re
from fractions import Fraction
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

from fleetplace.shared.placement._cel import ext_strings
from fleetplace.shared.placement._cel.library import Frame, function, size_cost
from fleetplace.shared.placement._cel.operators import add, check_int, compare, no_overload
from fleetplace.shared.placement._cel.semver import Semver, SemverError, parse_semver
from fleetplace.shared.placement._cel.stdlib import compile_regex
from fleetplace.shared.placement._cel.values import (
    INT64_MAX,
    INT64_MIN,
    CelEvalError,
    Duration,
    Uint,
    cel_equals,
)
from fleetplace.shared.placement.quantity import InvalidQuantity, Quantity, parse_quantity

# -- Lists ----------------------------------------------------------------------------------------


def _list(name: str, v: Any) -> list[Any] | tuple[Any, ...]:
    if type(v) not in (list, tuple):
        no_overload(name, v)
    return v  # type: ignore[no-any-return]


@function("isSorted", "(list) -> bool", member=True)
def is_sorted(frame: Frame, items: Any) -> bool:
    lst = _list("isSorted", items)
    frame.charge(size_cost(len(lst)) + len(lst))
    return all(compare("isSorted", lst[i], lst[i + 1]) <= 0 for i in range(len(lst) - 1))


@function("sum", "(list) -> dyn", member=True)
def list_sum(frame: Frame, items: Any) -> Any:
    lst = _list("sum", items)
    frame.charge(len(lst))
    if not lst:
        return 0
    total = lst[0]
    if type(total) not in (int, Uint, float, Duration):
        no_overload("sum", items)
    for x in lst[1:]:
        total = add(total, x)
    return total


def _extreme(frame: Frame, name: str, items: Any, want: int) -> Any:
    lst = _list(name, items)
    frame.charge(len(lst))
    if not lst:
        raise CelEvalError(f"{name}: list is empty")
    best = lst[0]
    for x in lst[1:]:
        if compare(name, x, best) == want:
            best = x
    if len(lst) == 1:
        compare(name, best, best)  # still reject incomparable element types
    return best


@function("min", "(list) -> dyn", member=True)
def list_min(frame: Frame, items: Any) -> Any:
    return _extreme(frame, "min", items, -1)


@function("max", "(list) -> dyn", member=True)
def list_max(frame: Frame, items: Any) -> Any:
    return _extreme(frame, "max", items, 1)


@function("indexOf", "(string, string) -> int", "(list, dyn) -> int", member=True)
def index_of(frame: Frame, receiver: Any, needle: Any) -> int:
    # strings extension and Kubernetes lists share the name; the receiver picks the meaning
    if type(receiver) is str:
        return ext_strings.index_of_string(frame, receiver, needle)
    lst = _list("indexOf", receiver)
    frame.charge(len(lst))
    return next((i for i, x in enumerate(lst) if cel_equals(x, needle)), -1)


@function("lastIndexOf", "(string, string) -> int", "(list, dyn) -> int", member=True)
def last_index_of(frame: Frame, receiver: Any, needle: Any) -> int:
    if type(receiver) is str:
        return ext_strings.last_index_of_string(frame, receiver, needle)
    lst = _list("lastIndexOf", receiver)
    frame.charge(len(lst))
    return next((i for i in range(len(lst) - 1, -1, -1) if cel_equals(lst[i], needle)), -1)


# -- Regex ----------------------------------------------------------------------------------------


@function("find", "(string, string) -> string", member=True)
def regex_find(frame: Frame, s: Any, pattern: Any) -> str:
    if type(s) is not str or type(pattern) is not str:
        no_overload("find", s, pattern)
    frame.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    m = compile_regex(pattern).search(s)
    return m.group(0) if m else ""


def _find_all(frame: Frame, s: Any, pattern: Any, limit: int) -> list[str]:
    if type(s) is not str or type(pattern) is not str:
        no_overload("findAll", s, pattern)
    frame.charge(size_cost(len(s)) * max(1, size_cost(len(pattern))))
    if limit == 0:
        return []
    out: list[str] = []
    for m in compile_regex(pattern).finditer(s):
        out.append(m.group(0))
        if 0 < limit <= len(out):
            break
    return out


@function("findAll", "(string, string) -> list", member=True)
def regex_find_all(frame: Frame, s: Any, pattern: Any) -> list[str]:
    return _find_all(frame, s, pattern, -1)


@function("findAll", "(string, string, int) -> list", member=True)
def regex_find_all_n(frame: Frame, s: Any, pattern: Any, n: Any) -> list[str]:
    if type(n) is not int:
        no_overload("findAll", s, pattern, n)
    return _find_all(frame, s, pattern, n)


# -- Quantity -------------------------------------------------------------------------------------


@function("quantity", "(string) -> kubernetes.Quantity")
def quantity(frame: Frame, s: Any) -> Quantity:
    if type(s) is not str:
        no_overload("quantity", s)
    try:
        return parse_quantity(s)
    except InvalidQuantity as e:
        raise CelEvalError(f"quantities must match the regular expression: {e}") from None


@function("isQuantity", "(string) -> bool")
def is_quantity(frame: Frame, s: Any) -> bool:
    if type(s) is not str:
        no_overload("isQuantity", s)
    try:
        parse_quantity(s)
    except InvalidQuantity:
        return False
    return True


def _quantity(name: str, *values: Any) -> None:
    for v in values:
        if type(v) is not Quantity:
            no_overload(name, *values)


# Kubernetes declares ``sign`` as a global function only: ``sign(quantity("1"))`` compiles,
# ``quantity("1").sign()`` does not (although the library's own documentation shows the latter).
@function("sign", "(kubernetes.Quantity) -> int")
def quantity_sign(frame: Frame, q: Any) -> int:
    _quantity("sign", q)
    return (q.value > 0) - (q.value < 0)  # type: ignore[no-any-return]


def _compare_to(name: str, a: Any, b: Any) -> int:
    if type(a) is Quantity and type(b) is Quantity:
        return (a.value > b.value) - (a.value < b.value)
    if type(a) is Semver and type(b) is Semver:
        return a.compare(b)
    no_overload(name, a, b)


@function(
    "isGreaterThan",
    "(kubernetes.Quantity, kubernetes.Quantity) -> bool",
    "(kubernetes.Semver, kubernetes.Semver) -> bool",
    member=True,
)
def is_greater_than(frame: Frame, a: Any, b: Any) -> bool:
    return _compare_to("isGreaterThan", a, b) > 0


@function(
    "isLessThan",
    "(kubernetes.Quantity, kubernetes.Quantity) -> bool",
    "(kubernetes.Semver, kubernetes.Semver) -> bool",
    member=True,
)
def is_less_than(frame: Frame, a: Any, b: Any) -> bool:
    return _compare_to("isLessThan", a, b) < 0


@function(
    "compareTo",
    "(kubernetes.Quantity, kubernetes.Quantity) -> int",
    "(kubernetes.Semver, kubernetes.Semver) -> int",
    member=True,
)
def compare_to(frame: Frame, a: Any, b: Any) -> int:
    return _compare_to("compareTo", a, b)


def _operand(name: str, q: Any, other: Any) -> Fraction:
    _quantity(name, q)
    if type(other) is Quantity:
        return other.value
    if type(other) is int:
        return Fraction(other)
    no_overload(name, q, other)


@function(
    "add",
    "(kubernetes.Quantity, kubernetes.Quantity) -> kubernetes.Quantity",
    "(kubernetes.Quantity, int) -> kubernetes.Quantity",
    member=True,
)
def quantity_add(frame: Frame, q: Any, other: Any) -> Quantity:
    operand = _operand("add", q, other)  # checks the receiver's type first
    return Quantity(q.value + operand, q.fmt)


@function(
    "sub",
    "(kubernetes.Quantity, kubernetes.Quantity) -> kubernetes.Quantity",
    "(kubernetes.Quantity, int) -> kubernetes.Quantity",
    member=True,
)
def quantity_sub(frame: Frame, q: Any, other: Any) -> Quantity:
    operand = _operand("sub", q, other)
    return Quantity(q.value - operand, q.fmt)


def _as_int64(q: Quantity) -> int | None:
    v = q.value
    if v.denominator != 1 or not INT64_MIN <= v.numerator <= INT64_MAX:
        return None
    return v.numerator


@function("isInteger", "(kubernetes.Quantity) -> bool", member=True)
def quantity_is_integer(frame: Frame, q: Any) -> bool:
    _quantity("isInteger", q)
    return _as_int64(q) is not None


@function("asInteger", "(kubernetes.Quantity) -> int", member=True)
def quantity_as_integer(frame: Frame, q: Any) -> int:
    _quantity("asInteger", q)
    n = _as_int64(q)
    if n is None:
        raise CelEvalError("cannot convert value to integer")
    return check_int(n)


@function("asApproximateFloat", "(kubernetes.Quantity) -> double", member=True)
def quantity_as_float(frame: Frame, q: Any) -> float:
    _quantity("asApproximateFloat", q)
    receiver: Quantity = q
    return receiver.approximate_float()


# -- Semver (base version only: no normalize overloads) ---------------------------------------------


@function("semver", "(string) -> kubernetes.Semver")
def semver(frame: Frame, s: Any) -> Semver:
    if type(s) is not str:
        no_overload("semver", s)
    try:
        return parse_semver(s)
    except SemverError as e:
        raise CelEvalError(str(e)) from None


@function("isSemver", "(string) -> bool")
def is_semver(frame: Frame, s: Any) -> bool:
    if type(s) is not str:
        no_overload("isSemver", s)
    try:
        parse_semver(s)
    except SemverError:
        return False
    return True


def _semver_part(name: str) -> None:
    def get(frame: Frame, v: Any) -> int:
        if type(v) is not Semver:
            no_overload(name, v)
        return check_int(getattr(v, name))

    function(name, "(kubernetes.Semver) -> int", member=True)(get)


for _part in ("major", "minor", "patch"):
    _semver_part(_part)


# -- URLs -----------------------------------------------------------------------------------------

_SCHEME: Final = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*:")


class URL:
    __slots__ = ("fragmentless", "host", "path", "query", "scheme")
    cel_type_name = "kubernetes.URL"

    def __init__(self, text: str) -> None:
        if (
            not text
            or "#" in text
            or any(c in text for c in " \t\n\r\x7f")
            or any(ord(c) < 0x20 for c in text)
        ):
            raise CelEvalError(f"URL parse error during conversion from string: {text}")
        if not text.startswith("/") and not _SCHEME.match(text):
            raise CelEvalError(f"URL parse error during conversion from string: {text}")
        parts = urlsplit(text)
        self.fragmentless = text
        self.scheme = parts.scheme
        self.host = parts.netloc.rpartition("@")[2]
        self.path = parts.path
        self.query = parts.query

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URL) and other.fragmentless == self.fragmentless

    def __hash__(self) -> int:
        return hash(self.fragmentless)

    def hostname(self) -> str:
        host = self.host
        if host.startswith("["):
            return host[1 : host.find("]")] if "]" in host else host[1:]
        return host.rpartition(":")[0] if ":" in host else host

    def port(self) -> str:
        host = self.host
        if host.startswith("["):
            end = host.find("]")
            rest = host[end + 1 :] if end >= 0 else ""
            return rest[1:] if rest.startswith(":") else ""
        return host.rpartition(":")[2] if ":" in host else ""


def _url(name: str, v: Any) -> URL:
    if type(v) is not URL:
        no_overload(name, v)
    return v


@function("url", "(string) -> kubernetes.URL")
def url(frame: Frame, s: Any) -> URL:
    if type(s) is not str:
        no_overload("url", s)
    return URL(s)


@function("isURL", "(string) -> bool")
def is_url(frame: Frame, s: Any) -> bool:
    if type(s) is not str:
        no_overload("isURL", s)
    try:
        URL(s)
    except CelEvalError:
        return False
    return True


@function("getScheme", "(kubernetes.URL) -> string", member=True)
def url_scheme(frame: Frame, u: Any) -> str:
    return _url("getScheme", u).scheme


@function("getHost", "(kubernetes.URL) -> string", member=True)
def url_host(frame: Frame, u: Any) -> str:
    return _url("getHost", u).host


@function("getHostname", "(kubernetes.URL) -> string", member=True)
def url_hostname(frame: Frame, u: Any) -> str:
    return _url("getHostname", u).hostname()


@function("getPort", "(kubernetes.URL) -> string", member=True)
def url_port(frame: Frame, u: Any) -> str:
    return _url("getPort", u).port()


@function("getEscapedPath", "(kubernetes.URL) -> string", member=True)
def url_path(frame: Frame, u: Any) -> str:
    return _url("getEscapedPath", u).path


@function("getQuery", "(kubernetes.URL) -> map", member=True)
def url_query(frame: Frame, u: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in parse_qsl(_url("getQuery", u).query, keep_blank_values=True):
        out.setdefault(k, []).append(v)
    return out


# -- IP and CIDR ----------------------------------------------------------------------------------

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_Interface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


def _parse_ip(text: str) -> _Address:
    if "%" in text:
        raise CelEvalError(f"IP address with zone value is not allowed: {text}")
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise CelEvalError(f"IP Address {text!r} parse error during conversion from string") from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise CelEvalError(f"IPv4-mapped IPv6 address {text!r} is not allowed")
    return addr


class IP:
    __slots__ = ("addr",)
    cel_type_name = "net.IP"

    def __init__(self, addr: _Address) -> None:
        self.addr = addr

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IP) and other.addr == self.addr

    def __hash__(self) -> int:
        return hash(self.addr)

    def cel_string(self) -> str:
        return str(self.addr)


class CIDR:
    __slots__ = ("iface",)
    cel_type_name = "net.CIDR"

    def __init__(self, iface: _Interface) -> None:
        self.iface = iface

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CIDR) and other.iface == self.iface

    def __hash__(self) -> int:
        return hash(self.iface)

    def cel_string(self) -> str:
        return str(self.iface)


def _ip_arg(name: str, v: Any) -> IP:
    if type(v) is not IP:
        no_overload(name, v)
    return v


def _cidr_arg(name: str, v: Any) -> CIDR:
    if type(v) is not CIDR:
        no_overload(name, v)
    return v


@function("ip", "(string) -> net.IP")
def ip(frame: Frame, s: Any) -> IP:
    if type(s) is not str:
        no_overload("ip", s)
    return IP(_parse_ip(s))


@function("isIP", "(string) -> bool")
def is_ip(frame: Frame, s: Any) -> bool:
    if type(s) is not str:
        no_overload("isIP", s)
    try:
        _parse_ip(s)
    except CelEvalError:
        return False
    return True


@function("ip.isCanonical", "(string) -> bool")
def ip_is_canonical(frame: Frame, s: Any) -> bool:
    if type(s) is not str:
        no_overload("ip.isCanonical", s)
    return str(_parse_ip(s)) == s


@function("family", "(net.IP) -> int", member=True)
def ip_family(frame: Frame, v: Any) -> int:
    return _ip_arg("family", v).addr.version


def _is_global_unicast(a: _Address) -> bool:
    # Go's net/netip definition: private ranges count as global unicast
    if a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local:
        return False
    return not (isinstance(a, ipaddress.IPv4Address) and a == ipaddress.IPv4Address("255.255.255.255"))


def _is_link_local_multicast(a: _Address) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("224.0.0.0/24")
    return a in ipaddress.IPv6Network("ff02::/16")


_IP_PREDICATES: Final = {
    "isUnspecified": lambda a: a.is_unspecified,
    "isLoopback": lambda a: a.is_loopback,
    "isLinkLocalMulticast": _is_link_local_multicast,
    "isLinkLocalUnicast": lambda a: a.is_link_local,
    "isGlobalUnicast": _is_global_unicast,
}


def _register_ip_predicate(name: str) -> None:
    predicate = _IP_PREDICATES[name]

    def check(frame: Frame, v: Any) -> bool:
        return bool(predicate(_ip_arg(name, v).addr))

    function(name, "(net.IP) -> bool", member=True)(check)


for _name in _IP_PREDICATES:
    _register_ip_predicate(_name)


def _parse_cidr(text: str) -> _Interface:
    addr_text, slash, bits = text.partition("/")
    if not slash or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        raise CelEvalError(f"network address parse error during conversion from string: {text}")
    addr = _parse_ip(addr_text)
    if int(bits) > addr.max_prefixlen:
        raise CelEvalError(f"network address parse error during conversion from string: {text}")
    return ipaddress.ip_interface(f"{addr}/{int(bits)}")


@function("cidr", "(string) -> net.CIDR")
def cidr(frame: Frame, s: Any) -> CIDR:
    if type(s) is not str:
        no_overload("cidr", s)
    return CIDR(_parse_cidr(s))


@function("isCIDR", "(string) -> bool")
def is_cidr(frame: Frame, s: Any) -> bool:
    if type(s) is not str:
        no_overload("isCIDR", s)
    try:
        _parse_cidr(s)
    except CelEvalError:
        return False
    return True


@function("containsIP", "(net.CIDR, net.IP) -> bool", "(net.CIDR, string) -> bool", member=True)
def cidr_contains_ip(frame: Frame, c: Any, other: Any) -> bool:
    network = _cidr_arg("containsIP", c).iface.network
    addr = _parse_ip(other) if type(other) is str else _ip_arg("containsIP", other).addr
    return addr.version == network.version and addr in network


@function("containsCIDR", "(net.CIDR, net.CIDR) -> bool", "(net.CIDR, string) -> bool", member=True)
def cidr_contains_cidr(frame: Frame, c: Any, other: Any) -> bool:
    network = _cidr_arg("containsCIDR", c).iface.network
    inner = _parse_cidr(other) if type(other) is str else _cidr_arg("containsCIDR", other).iface
    if inner.version != network.version:
        return False
    return inner.network.prefixlen >= network.prefixlen and inner.ip in network


@function("ip", "(net.CIDR) -> net.IP", member=True)
def cidr_ip(frame: Frame, c: Any) -> IP:
    return IP(_cidr_arg("ip", c).iface.ip)


@function("masked", "(net.CIDR) -> net.CIDR", member=True)
def cidr_masked(frame: Frame, c: Any) -> CIDR:
    network = _cidr_arg("masked", c).iface.network
    return CIDR(ipaddress.ip_interface(str(network)))


@function("prefixLength", "(net.CIDR) -> int", member=True)
def cidr_prefix_length(frame: Frame, c: Any) -> int:
    return _cidr_arg("prefixLength", c).iface.network.prefixlen
