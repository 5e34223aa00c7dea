"""A Kubernetes control plane on loopback for tests, `make hub` and the demo's hub acts: etcd and
kube-apiserver.

    with control_plane(crds=upstream_crds()) as hub:  # shared/upstream_crds.py
        hub.kubeconfig          # a kubeconfig for the admin (client certificate in system:masters)
        hub.request("GET", "/api/v1/namespaces")

Both servers bind 127.0.0.1 on free ports and keep their data in a temporary directory; the
API server runs with RBAC (`--authorization-mode=RBAC`), a CA and serving certificate made here,
and a ServiceAccount signing key, so tokens for ServiceAccounts (TokenRequest) work. The CRDs
given are applied and waited for until Established. Each server runs in its own process group
and is stopped by that group's id: SIGTERM, then SIGKILL. The binaries come from
`make hub-binaries`, which builds them from the Go modules pinned in tests/hub/controlplane/go.mod
(docs/hub.md#the-control-plane-for-tests).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import http.client
import ipaddress
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.yaml_text import yaml_document

# The versions tests/hub/controlplane/go.mod pins; `make hub-binaries` builds them into this folder.
KUBERNETES_VERSION = "v1.34.4"
ETCD_VERSION = "v3.6.4"
BINARIES_ENV = "FLEETPLACE_HUB_BINARIES"
_REPO = Path(__file__).resolve().parent.parent
DEFAULT_BINARIES = _REPO / ".cache" / "hub" / KUBERNETES_VERSION
# The service network the API server allocates its own `kubernetes` Service from.
SERVICE_CIDR = "10.0.0.0/24"
ADMIN_USER = "fleetplace-admin"
# How long a request answered 429 (a kind's storage initializing) is asked again.
TOO_MANY_REQUESTS_WAIT_S = 60.0


class ControlPlaneError(Exception):
    """The control plane could not be built, started or asked something."""


class ApiError(ControlPlaneError):
    """The API server answered with an error status."""

    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        self.status = status
        self.body = body
        try:
            message = str(json.loads(body).get("message", ""))
        except (ValueError, AttributeError):
            message = body[:300].decode(errors="replace")
        super().__init__(f"{method} {path}: {status} {message}")


@dataclass(frozen=True)
class Binaries:
    kube_apiserver: Path
    etcd: Path
    kube_controller_manager: Path

    @classmethod
    def find(cls, folder: Path | None = None) -> Binaries:
        """The binaries in `folder`, `$FLEETPLACE_HUB_BINARIES` or the build cache; a clear error
        saying how to build them when one is missing."""
        where = folder or Path(os.environ.get(BINARIES_ENV) or DEFAULT_BINARIES)
        found = cls(where / "kube-apiserver", where / "etcd", where / "kube-controller-manager")
        for binary in (found.kube_apiserver, found.etcd, found.kube_controller_manager):
            if not os.access(binary, os.X_OK):
                raise ControlPlaneError(
                    f"{binary} is missing: `make hub-binaries` builds kube-apiserver and "
                    f"kube-controller-manager {KUBERNETES_VERSION} and etcd {ETCD_VERSION} there "
                    f"(or set {BINARIES_ENV} to a folder holding the three)"
                )
        return found


@dataclass(frozen=True)
class Credentials:
    """The files the API server and its admin need, all PEM."""

    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    service_account_key: Path
    service_account_public: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def make_credentials(folder: Path) -> Credentials:
    """A CA, the API server's serving certificate (for 127.0.0.1 and the in-cluster names), an admin
    client certificate in the `system:masters` group, and a ServiceAccount signing key."""
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=7))
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fleetplace-hub-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(
        subject: x509.Name, usage: x509.ObjectIdentifier, san: x509.SubjectAlternativeName | None
    ) -> Any:
        key = _key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(valid[0])
            .not_valid_after(valid[1])
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if san is not None:
            builder = builder.add_extension(san, critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    in_cluster_ip = next(iter(ipaddress.IPv4Network(SERVICE_CIDR).hosts()))
    serving, serving_key = leaf(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
        ExtendedKeyUsageOID.SERVER_AUTH,
        x509.SubjectAlternativeName(
            [
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(in_cluster_ip),
                x509.DNSName("localhost"),
                x509.DNSName("kubernetes"),
                x509.DNSName("kubernetes.default"),
                x509.DNSName("kubernetes.default.svc"),
            ]
        ),
    )
    # The API server takes a client certificate's CN as the user and its O as the groups.
    admin, admin_key = leaf(
        x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                x509.NameAttribute(NameOID.COMMON_NAME, ADMIN_USER),
            ]
        ),
        ExtendedKeyUsageOID.CLIENT_AUTH,
        None,
    )
    creds = Credentials(
        ca_cert=folder / "ca.crt",
        serving_cert=folder / "apiserver.crt",
        serving_key=folder / "apiserver.key",
        admin_cert=folder / "admin.crt",
        admin_key=folder / "admin.key",
        service_account_key=folder / "sa.key",
        service_account_public=folder / "sa.pub",
    )
    creds.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    creds.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    _write_key(creds.serving_key, serving_key)
    creds.admin_cert.write_bytes(admin.public_bytes(serialization.Encoding.PEM))
    _write_key(creds.admin_key, admin_key)
    sa_key = _key()
    _write_key(creds.service_account_key, sa_key)
    creds.service_account_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return creds


def kubeconfig_text(server: str, creds: Credentials, *, token: str | None = None, user: str = "admin") -> str:
    """A self-contained kubeconfig (certificates inlined) for the admin, or for a bearer `token`."""

    def inline(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    credentials: dict[str, str] = (
        {"token": token}
        if token is not None
        else {
            "client-certificate-data": inline(creds.admin_cert),
            "client-key-data": inline(creds.admin_key),
        }
    )
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "hub",
                "cluster": {"server": server, "certificate-authority-data": inline(creds.ca_cert)},
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": user, "context": {"cluster": "hub", "user": user}}],
        "current-context": user,
    }
    return yaml_document(config)


@dataclass(frozen=True)
class ControlPlane:
    """A running control plane: where it listens and how to be its admin."""

    server: str  # https://127.0.0.1:<port>
    etcd: str  # http://127.0.0.1:<port>
    kubeconfig: Path
    credentials: Credentials
    data_dir: Path
    apiserver_pid: int
    etcd_pid: int

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.credentials.ca_cert))
        context.load_cert_chain(str(self.credentials.admin_cert), str(self.credentials.admin_key))
        return context

    def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        content_type: str = "application/json",
        token: str | None = None,
        timeout: float = 30.0,
    ) -> Any:
        """One call as the admin (or as the bearer of `token`); the decoded JSON answer. An error
        status raises ApiError with the server's message. A 429 is asked again for up to
        `TOO_MANY_REQUESTS_WAIT_S`, as client-go does: the API server answers it while a kind's
        storage is (re)initializing (just after its CRD is Established, or its watch cache
        re-listing after etcd was compacted)."""
        deadline = time.monotonic() + TOO_MANY_REQUESTS_WAIT_S
        while True:
            try:
                return self._request_once(method, path, body, content_type, token, timeout)
            except ApiError as error:
                if error.status != 429 or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _request_once(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None,
        content_type: str,
        token: str | None,
        timeout: float,
    ) -> Any:
        port = int(self.server.rsplit(":", 1)[1])
        context = ssl.create_default_context(cafile=str(self.credentials.ca_cert))
        headers = {"Accept": "application/json"}
        if token is None:
            context.load_cert_chain(str(self.credentials.admin_cert), str(self.credentials.admin_key))
        else:
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout)
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            payload = response.read()
        finally:
            connection.close()
        if response.status >= 400:
            raise ApiError(method, path, response.status, payload)
        if "json" not in (response.getheader("Content-Type") or ""):
            return payload.decode(errors="replace")  # /readyz and friends answer in text
        return json.loads(payload) if payload else None

    def apply(self, obj: Mapping[str, Any], *, field_manager: str = "fleetplace-tests") -> Any:
        """Server-side apply of one object (the path from its apiVersion, kind and namespace)."""
        path = resource_path(self, obj)
        query = f"?fieldManager={field_manager}&force=true&fieldValidation=Strict"
        return self.request("PATCH", path + query, obj, content_type="application/apply-patch+yaml")

    def compact_etcd(self) -> int:
        """Compact etcd up to its current revision, so every older resourceVersion is gone (a
        watch from one gets `410 Gone`). The revision compacted to."""
        header = _etcd_call(self.etcd, "/v3/kv/range", {"key": base64.b64encode(b"/").decode()})
        revision = int(header["header"]["revision"])
        _etcd_call(self.etcd, "/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision


def _etcd_call(etcd: str, path: str, body: Mapping[str, Any]) -> Any:
    request = urllib.request.Request(
        etcd + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


_discovery: dict[tuple[str, str, str], tuple[str, bool]] = {}


def resource_path(hub: ControlPlane, obj: Mapping[str, Any]) -> str:
    """The URL path of `obj` (its plural and scope found by discovery)."""
    api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
    meta = obj["metadata"]
    cache_key = (hub.server, api_version, kind)
    if cache_key not in _discovery:
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        for resource in hub.request("GET", base)["resources"]:
            if resource["kind"] == kind and "/" not in resource["name"]:
                _discovery[cache_key] = (str(resource["name"]), bool(resource["namespaced"]))
                break
        else:
            raise ControlPlaneError(f"the API server serves no kind {kind} in {api_version}")
    plural, namespaced = _discovery[cache_key]
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if namespaced:
        return f"{base}/namespaces/{meta['namespace']}/{plural}/{meta['name']}"
    return f"{base}/{plural}/{meta['name']}"


def _stop_group(process: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """Stop a server by its process group id: SIGTERM, SIGKILL after `timeout`."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _spawn_logged(argv: Sequence[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start a server with its output in `log_path`."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Own process group: a Ctrl-C meant for the parent does not reach it; the group is stopped.
            start_new_session=True,
        )


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _wait(what: str, ready: Any, process: subprocess.Popen[bytes], log_path: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ControlPlaneError(
                f"{what} exited with status {process.returncode} before it was ready:\n{_tail(log_path)}"
            )
        if ready():
            return
        time.sleep(0.2)
    raise ControlPlaneError(f"{what} not ready in time:\n{_tail(log_path)}")


def _etcd_healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as response:
            return bool(json.loads(response.read()).get("health") == "true")
    except (OSError, ValueError):
        return False


def _apiserver_ready(hub: ControlPlane) -> bool:
    try:
        hub.request("GET", "/readyz", timeout=5)
    except (OSError, ControlPlaneError, ValueError):
        return False
    return True


def _start_etcd(binaries: Binaries, data: Path, deadline: float) -> tuple[subprocess.Popen[bytes], str]:
    client, peer = free_port(), free_port()
    url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    log_path = data / "etcd.log"
    process = _spawn_logged(
        [
            str(binaries.etcd),
            "--name=hub",
            f"--data-dir={data / 'etcd'}",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=hub={peer_url}",
            # A throwaway store: durability is not worth the fsyncs on a shared test machine.
            "--unsafe-no-fsync",
            "--log-level=warn",
        ],
        log_path,
    )
    try:
        _wait("etcd", lambda: _etcd_healthy(url), process, log_path, deadline)
    except BaseException:
        _stop_group(process)
        raise
    return process, url


def _apiserver_argv(
    binaries: Binaries, creds: Credentials, data: Path, etcd: str, port: int, extra: Sequence[str]
) -> list[str]:
    return [
        str(binaries.kube_apiserver),
        f"--etcd-servers={etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={data / 'certs'}",
        f"--tls-cert-file={creds.serving_cert}",
        f"--tls-private-key-file={creds.serving_key}",
        f"--client-ca-file={creds.ca_cert}",
        "--authorization-mode=RBAC",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={creds.service_account_public}",
        f"--service-account-signing-key-file={creds.service_account_key}",
        # The API server compacts etcd every 5 minutes by default; tests compact when they mean to.
        "--etcd-compaction-interval=0",
        "--v=0",
        *extra,
    ]


@contextlib.contextmanager
def control_plane(
    *,
    crds: Sequence[Path] = (),
    binaries: Binaries | None = None,
    data_dir: Path | None = None,
    extra_apiserver_args: Sequence[str] = (),
    start_timeout_s: float = 180.0,
) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver for the duration of the block, with `crds` applied and Established.
    Everything is stopped by process group and the data directory removed afterwards (a
    `data_dir` given is kept)."""
    found = binaries or Binaries.find()
    owned = data_dir is None
    data = Path(tempfile.mkdtemp(prefix="fleetplace-hub-")) if data_dir is None else data_dir
    data.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + start_timeout_s
    processes: list[subprocess.Popen[bytes]] = []
    try:
        creds = make_credentials(data)
        etcd, etcd_url = _start_etcd(found, data, deadline)
        processes.append(etcd)
        port = free_port()
        log_path = data / "kube-apiserver.log"
        apiserver = _spawn_logged(
            _apiserver_argv(found, creds, data, etcd_url, port, extra_apiserver_args), log_path
        )
        processes.append(apiserver)
        server = f"https://127.0.0.1:{port}"
        kubeconfig = data / "kubeconfig"
        kubeconfig.write_text(kubeconfig_text(server, creds))
        kubeconfig.chmod(0o600)
        hub = ControlPlane(
            server=server,
            etcd=etcd_url,
            kubeconfig=kubeconfig,
            credentials=creds,
            data_dir=data,
            apiserver_pid=apiserver.pid,
            etcd_pid=etcd.pid,
        )
        _wait("kube-apiserver", lambda: _apiserver_ready(hub), apiserver, log_path, deadline)
        install_crds(hub, crds, deadline=deadline)
        yield hub
    finally:
        for process in reversed(processes):
            _stop_group(process)
        if owned:
            shutil.rmtree(data, ignore_errors=True)


@contextlib.contextmanager
def garbage_collector(
    hub: ControlPlane, *, binaries: Binaries | None = None, start_timeout_s: float = 120.0
) -> Iterator[int]:
    """Kubernetes' garbage collector on `hub` for the duration of the block: kube-controller-manager
    running that one controller (no other controller, no leader election, no serving port). It
    deletes an object whose owner references all name objects that are gone, as on a real cluster
    (the API server alone never does). The block starts once the collector has collected a
    canary: a ConfigMap owned by a ConfigMap that is deleted. Yields its PID; stopped by its
    process group, like the other servers."""
    found = binaries or Binaries.find()
    log_path = hub.data_dir / f"kube-controller-manager-{free_port()}.log"
    process = _spawn_logged(
        [
            str(found.kube_controller_manager),
            f"--kubeconfig={hub.kubeconfig}",
            "--controllers=garbagecollector",
            "--leader-elect=false",
            "--secure-port=0",
            "--v=0",
        ],
        log_path,
    )
    try:
        _wait(
            "kube-controller-manager's garbage collector",
            _canary_collector(hub),
            process,
            log_path,
            time.monotonic() + start_timeout_s,
        )
        yield process.pid
    finally:
        _stop_group(process)


def _canary_collector(hub: ControlPlane) -> Any:
    """A readiness check for the garbage collector: an owner ConfigMap and its dependent are made
    in a namespace of their own and the owner deleted; the check is True once the dependent is
    gone too."""
    suffix = os.urandom(4).hex()
    namespace = f"gc-canary-{suffix}"
    hub.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = hub.request("POST", base, {"metadata": {"name": "owner"}})
    hub.request(
        "POST",
        base,
        {
            "metadata": {
                "name": "dependent",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": "owner",
                        "uid": owner["metadata"]["uid"],
                    }
                ],
            }
        },
    )
    hub.request("DELETE", f"{base}/owner")

    def collected() -> bool:
        try:
            hub.request("GET", f"{base}/dependent")
        except ApiError as error:
            return error.status == 404
        return False

    return collected


def install_crds(hub: ControlPlane, paths: Sequence[Path], *, deadline: float) -> list[str]:
    """Apply every CustomResourceDefinition in `paths` and wait until each is Established and its
    served versions list. The names installed; a document that is not a CRD is an error naming its file."""
    names: list[str] = []
    lists: list[str] = []  # each served version's list path
    for path in paths:
        for index, document in enumerate(yaml.safe_load_all(path.read_text())):
            if document is None:
                continue
            if document.get("kind") != "CustomResourceDefinition":
                raise ControlPlaneError(
                    f"{path}: document {index}: kind {document.get('kind')!r} is not a CustomResourceDefinition"
                )
            try:
                hub.apply(document)
            except ApiError as error:
                raise ControlPlaneError(f"{path}: document {index}: {error}") from error
            names.append(str(document["metadata"]["name"]))
            spec = document["spec"]
            lists += [
                f"/apis/{spec['group']}/{v['name']}/{spec['names']['plural']}"
                for v in spec["versions"]
                if v.get("served", False)
            ]
    for name in names:
        while not _established(hub, name):
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"CustomResourceDefinition {name} not Established in time")
            time.sleep(0.1)
    # Established is not yet served: the kind's storage answers 429 a moment longer (`request`
    # asks again until it lists)
    for list_path in lists:
        hub.request("GET", list_path)
    return names


def _established(hub: ControlPlane, name: str) -> bool:
    crd = hub.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = crd.get("status", {}).get("conditions", [])
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
