"""The chart under test (compose/helm/fleetplace), rendered by helm, and the checks its objects
must pass: the Pod Security Standard *restricted* and the Kafka ACLs each worker needs."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from fleetplace.services.kafka_access import WorkerAccess, operations, workers

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "compose" / "helm" / "fleetplace"
HELM = ROOT / ".cache" / "helm" / "helm"
# The values matrix: the defaults, beside Strimzi (TLS, SCRAM), any Kafka (TLS, SCRAM), every
# optional part, the hub bridge in each mode.
MATRIX = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))
RELEASE = "fp"
NAMESPACE = "fleet"


def build_helm() -> Path:
    """helm from the Go module proxy, by the Makefile (a no-op once built)."""
    subprocess.run(["make", "--no-print-directory", "-s", "helm"], cwd=ROOT, check=True, timeout=1800)
    return HELM


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HELM), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=check
    )


def render(values: Sequence[str] = (), sets: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every object `helm template` renders (hooks included) for values files under ci/ and --set's."""
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    for name in values:
        args += ["-f", str(CHART / "ci" / name)]  # an absolute path stays as it is
    for item in sets:
        args += ["--set", item]
    done = helm(*args, check=False)
    if done.returncode != 0:
        raise RenderError(done.stderr)
    return [d for d in yaml.safe_load_all(done.stdout) if d]


class RenderError(Exception):
    """helm refused the values (its message is the exception's)."""


def of_kind(objects: Iterable[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


# ---- Pod Security Standard "restricted" (kubernetes.io/docs/concepts/security/pod-security-standards)

_RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    kind = obj["kind"]
    if kind == "Pod":
        return obj["spec"]  # type: ignore[no-any-return]
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        return obj["spec"]["template"]["spec"]  # type: ignore[no-any-return]
    if kind == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]  # type: ignore[no-any-return]
    return None


def restricted_violations(obj: Mapping[str, Any]) -> list[str]:
    """What in one object's pod template the *restricted* profile forbids, by field path."""
    spec = pod_spec(obj)
    if spec is None:
        return []
    where = f"{obj['kind']}/{obj['metadata']['name']}"
    out: list[str] = []
    pod_sc = spec.get("securityContext") or {}
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(flag):
            out.append(f"{where}: spec.{flag} must be unset or false")
    for volume in spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            out.append(f"{where}: volume {volume['name']}: type {sorted(kinds)} is not allowed")
    if pod_sc.get("runAsUser") == 0:
        out.append(f"{where}: spec.securityContext.runAsUser must not be 0")
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type")
    if pod_seccomp not in (None, "RuntimeDefault", "Localhost"):
        out.append(f"{where}: spec.securityContext.seccompProfile.type {pod_seccomp} is not allowed")
    for list_name in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(list_name) or []:
            at = f"{where}: {list_name}[{c['name']}].securityContext"
            sc = c.get("securityContext") or {}
            if sc.get("privileged"):
                out.append(f"{at}.privileged must be false")
            if sc.get("allowPrivilegeEscalation") is not False:
                out.append(f"{at}.allowPrivilegeEscalation must be false")
            if not (
                sc.get("runAsNonRoot") is True
                or (pod_sc.get("runAsNonRoot") is True and "runAsNonRoot" not in sc)
            ):
                out.append(f"{at}.runAsNonRoot must be true (here or in the pod)")
            if sc.get("runAsUser") == 0:
                out.append(f"{at}.runAsUser must not be 0")
            seccomp = (sc.get("seccompProfile") or {}).get("type", pod_seccomp)
            if seccomp not in ("RuntimeDefault", "Localhost"):
                out.append(
                    f"{at}.seccompProfile.type must be RuntimeDefault or Localhost (here or in the pod)"
                )
            caps = sc.get("capabilities") or {}
            if "ALL" not in (caps.get("drop") or []):
                out.append(f"{at}.capabilities.drop must contain ALL")
            added = set(caps.get("add") or []) - {"NET_BIND_SERVICE"}
            if added:
                out.append(f"{at}.capabilities.add {sorted(added)} is not allowed")
            for port in c.get("ports") or []:
                if port.get("hostPort"):
                    out.append(f"{at}: hostPort {port['hostPort']} is not allowed")
    return out


# ---- Kafka ACLs


def granted(user: Mapping[str, Any], prefix: str) -> dict[tuple[str, str], frozenset[str]]:
    """A rendered KafkaUser's simple ACLs as (resource type, unprefixed name) -> operations."""
    out: dict[tuple[str, str], set[str]] = {}
    for acl in user["spec"]["authorization"]["acls"]:
        resource = acl["resource"]
        assert acl.get("type", "allow") == "allow", acl
        name = resource["name"]
        pattern = resource.get("patternType", "literal")
        # only transactional ids are granted by prefix (`<group>.*`): one per input partition
        assert pattern == ("prefix" if resource["type"] == "transactionalId" else "literal"), acl
        if pattern == "prefix":
            name += "*"
        if resource["type"] == "topic":
            assert name.startswith(prefix), name
            name = name[len(prefix) :]
        out.setdefault((resource["type"], name), set()).update(acl["operations"])
    return {k: frozenset(v) for k, v in out.items()}


def acl_differences(
    needed: Mapping[tuple[str, str], frozenset[str]], given: Mapping[tuple[str, str], frozenset[str]]
) -> list[str]:
    """Each ACL a worker needs and lacks, and each it has and does not need."""
    out = []
    for key in sorted(set(needed) | set(given)):
        lack = needed.get(key, frozenset()) - given.get(key, frozenset())
        extra = given.get(key, frozenset()) - needed.get(key, frozenset())
        if lack:
            out.append(f"{key[0]} {key[1]}: missing {sorted(lack)}")
        if extra:
            out.append(f"{key[0]} {key[1]}: not needed {sorted(extra)}")
    return out


def access_by_worker() -> dict[str, WorkerAccess]:
    return {w.name: w for w in workers()}


def needed_acls(worker: str, config: Mapping[str, str]) -> dict[tuple[str, str], frozenset[str]]:
    return operations(access_by_worker()[worker], config)


def values_of(name: str) -> dict[str, Any]:
    return yaml.safe_load((CHART / "ci" / name).read_text()) or {}


def component(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["labels"]["app.kubernetes.io/component"])
