# fleetplace — every target sets up what it needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The build mode: compiled (the modules listed in shared/native.py, with mypyc) or, with
# FLEETPLACE_PURE_PYTHON=1, pure Python. Each mode has its own stamp; building one removes the other's.
MODE := $(if $(filter-out 0,$(FLEETPLACE_PURE_PYTHON)),pure,compiled)
NATIVE := $(VENV)/.native-$(MODE)
COMPILED_SOURCES := $(shell $(PY) -c "import runpy; n = runpy.run_path('shared/native.py'); print(' '.join(n['path_of'](m) for m in n['MODULES']))")

.PHONY: apache-kafka faults-apache helm native upstream-crds hub-binaries hub unit-pure screenshots test lint typecheck unit faults fuzz load demo bench bench-engine bench-queues bench-queues-whatif bench-e2e bench-audit bench-rollout bench-takeover bench-scores bench-hub clean

$(STAMP): pyproject.toml
	@echo "fleetplace: installing the dependencies into $(VENV) (about two minutes the first time)"
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip 'setuptools>=77' wheel
	FLEETPLACE_PURE_PYTHON=1 $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The modules listed in shared/native.py compiled with mypyc, in place, rebuilt when one of them
# (or that list) changes: a stale extension would shadow the edited .py. Other modules are never
# compiled, so editing them needs no rebuild. FLEETPLACE_PURE_PYTHON=1 builds none. The project is
# installed editable ($(STAMP)), so the extensions built beside their sources are what it imports:
# setup.py runs once (through pip it ran mypyc twice) and says what each phase is doing.
$(NATIVE): $(STAMP) setup.py shared/native.py $(COMPILED_SOURCES)
	rm -f $(VENV)/.native-*
	find shared services -name '*.so' -delete
	rm -rf build
	$(BIN)/python setup.py --quiet build_ext --inplace
	touch $(NATIVE)

# helm, built from the Go module proxy at the version pinned in compose/helm/tools/go.mod (no
# binary download), for the chart's tests (tests/deploy). Go keeps its module and build caches.
HELM := .cache/helm/helm
$(HELM): compose/helm/tools/go.mod compose/helm/tools/go.sum
	cd compose/helm/tools && go build -p 2 -o ../../../$(HELM) helm.sh/helm/v4/cmd/helm

helm: $(HELM)

native:
	rm -f $(NATIVE)
	$(MAKE) $(NATIVE)

# The explorer's screenshots in docs/explorer/ (docs/explorer.md), taken by its browser test.
screenshots: $(NATIVE)
	FLEETPLACE_SCREENSHOTS=docs/explorer $(BIN)/pytest -p no:cacheprovider tests/explorer/test_browser.py

# The tests again with the same sources interpreted (CI runs both modes): every test that needs
# no broker, which is every compiled module's tests (the engine, the scheduler's processor, the
# auditor, the API readers); the broker-backed tests exercise the Kafka shell around them, which
# is interpreted in both builds, and take most of the suite's time waiting on the broker.
unit-pure:
	FLEETPLACE_PURE_PYTHON=1 $(MAKE) unit PYTEST_ARGS='-m "not slow and not integration"'


# The upstream CRDs that tests/upstream checks every object fleetplace writes against: Go fetches
# the API modules pinned in shared/upstream/go.mod into its own module cache (the tests do the same
# on first use; this target only fetches them ahead, e.g. before going offline).
upstream-crds:
	cd shared/upstream && GOFLAGS=-mod=mod go mod download open-cluster-management.io/api sigs.k8s.io/cluster-inventory-api

# The control plane of the hub tests (shared/control_plane.py): kube-apiserver and etcd built from
# the Go modules pinned in tests/hub/controlplane/go.mod into the git-ignored .cache/ (Go's own
# build and module caches make a rebuild after `git clean` quick). `make hub` runs one in the
# foreground: its first line is KUBECONFIG=<path>; Ctrl-C or SIGTERM stops it and removes its data.
HUB_K8S := $(shell sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[^ ]*\).*/\1/p' tests/hub/controlplane/go.mod)
HUB_BIN := .cache/hub/$(HUB_K8S)
# What Kubernetes' own build stamps in, so that the server reports its release (`kubectl version`).
HUB_VERSION_FLAGS := -X k8s.io/component-base/version.gitVersion=$(HUB_K8S) -X k8s.io/component-base/version.gitMajor=$(word 2,$(subst ., ,$(subst v,v ,$(HUB_K8S)))) -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(HUB_K8S))) -X k8s.io/component-base/version.gitTreeState=clean
hub-binaries: $(HUB_BIN)/kube-apiserver $(HUB_BIN)/kube-controller-manager $(HUB_BIN)/etcd

$(HUB_BIN)/kube-apiserver: tests/hub/controlplane/go.mod tests/hub/controlplane/go.sum
	@echo "fleetplace: building kube-apiserver $(HUB_K8S) (10-20 minutes the first time)" >&2
	cd tests/hub/controlplane && go build -p 2 -ldflags "$(HUB_VERSION_FLAGS)" -o $(CURDIR)/$@ k8s.io/kubernetes/cmd/kube-apiserver >&2

# Only its garbage collector runs (shared/control_plane.py `garbage_collector`): what removes a
# deleted Placement's PlacementDecisions through their owner references.
$(HUB_BIN)/kube-controller-manager: tests/hub/controlplane/go.mod tests/hub/controlplane/go.sum
	@echo "fleetplace: building kube-controller-manager $(HUB_K8S) (5-10 minutes the first time)" >&2
	cd tests/hub/controlplane && go build -p 2 -ldflags "$(HUB_VERSION_FLAGS)" -o $(CURDIR)/$@ k8s.io/kubernetes/cmd/kube-controller-manager >&2

$(HUB_BIN)/etcd: tests/hub/controlplane/go.mod tests/hub/controlplane/go.sum
	cd tests/hub/controlplane && go build -p 2 -o $(CURDIR)/$@ go.etcd.io/etcd/server/v3 >&2

hub:
	@$(MAKE) --no-print-directory -s $(STAMP) hub-binaries >&2
	@$(BIN)/python -m tests.hub.serve

lint: $(NATIVE)
	$(BIN)/ruff check fleetplace shared services tests
	$(BIN)/ruff format --check fleetplace shared services tests

typecheck: $(NATIVE)
	$(BIN)/mypy

# The tests run in TEST_WORKERS processes (pytest-xdist), one file per process at a time
# (--dist loadfile: a file's tests keep their order and its module fixtures are built once).
# Most of the suite waits on brokers, sessions and timers, so there are more processes than the two
# cores they were measured on: with two the cores were busy 55 % of the run (513 s), with three
# 69 % (366 s), with four 81 % (275 s); three leaves the timing-sensitive tests room on a slower
# machine. TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 3
# The broker of the integration tests (tests/conftest.py): embedded, apache (Apache Kafka from
# Maven Central, needs Java 17 and Maven) or both, which runs each of them on both brokers.
TEST_BROKER ?= both
unit: $(NATIVE) $(HELM)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --broker $(TEST_BROKER) $(PYTEST_ARGS)

test: lint typecheck unit

# Fault injection on real processes (tests/faults): every scenario of the scheduler and of the
# rollout loop, figures as JSON lines.
faults: $(NATIVE)
	$(BIN)/pytest -m "faults and not apache" -s -p no:cacheprovider tests/faults

# The same checks on a three-node Apache Kafka, while scheduler workers and then rollout workers
# publish: partition leader and active controller SIGKILLed, a rolling restart, a node SIGSTOPped
# for 20 s, worker SIGKILLs (tests/faults/test_apache_faults.py); JSON lines.
faults-apache: $(NATIVE)
	$(BIN)/pytest -m "faults and apache" -s -p no:cacheprovider tests/faults

# 100,000 hostile records into a scheduler worker, 50,000 into a rollout worker and a flood of
# 100,000 identical reports (tests/fuzz), figures as JSON lines.
fuzz: $(NATIVE)
	$(BIN)/pytest -m slow -s -p no:cacheprovider tests/fuzz

# 1,000,000 cluster updates at 5,000 clusters and 5,000 placements (tests/load); JSON lines.
load: $(NATIVE)
	$(BIN)/python -m tests.load.scheduler

demo: $(NATIVE)
	$(BIN)/fleetplace demo

# The broker of bench-e2e, bench-audit, bench-takeover and bench-rollout: embedded or apache (Apache
# Kafka, one KRaft node); each JSON line says which ("broker").
BENCH_BROKER ?= embedded

bench: bench-engine bench-queues bench-queues-whatif bench-e2e bench-audit bench-rollout bench-takeover bench-scores bench-hub

bench-engine: $(NATIVE)
	$(BIN)/python -m tests.bench.engine

bench-queues: $(NATIVE)
	$(BIN)/python -m tests.bench.queues

# `queues what-if` over 100,000 recorded applications on the embedded broker, beside reading them
bench-queues-whatif: $(NATIVE)
	$(BIN)/python -m tests.bench.queues_whatif

# the fleet as ManagedClusters, then the same fleet as ClusterProfiles
bench-e2e: $(NATIVE)
	FLEETPLACE_TEST_BROKER=$(BENCH_BROKER) $(BIN)/python -m tests.bench.e2e
	FLEETPLACE_TEST_BROKER=$(BENCH_BROKER) $(BIN)/python -m tests.bench.e2e --profiles

bench-audit: $(NATIVE)
	FLEETPLACE_TEST_BROKER=$(BENCH_BROKER) $(BIN)/python -m tests.bench.audit

# SIGKILL one of two workers at 5,000 clusters x 10,000 placements: seconds until its placements
# are served again, beside a bare read of the same topics (tests/bench/takeover.py)
bench-takeover: $(NATIVE)
	FLEETPLACE_TEST_BROKER=$(BENCH_BROKER) $(BIN)/python -m tests.bench.takeover

bench-rollout: $(NATIVE)
	FLEETPLACE_TEST_BROKER=$(BENCH_BROKER) $(BIN)/python -m tests.bench.rollout

bench-scores: $(NATIVE)
	$(BIN)/python -m tests.bench.scores

# 5,000 ManagedClusters and 1,000 Placements created on a control plane: seconds until every
# decision is on the hub as PlacementDecisions (a scheduler worker and the bridge in replace mode,
# embedded broker), beside a plain list of the same objects, and the bridge's peak RSS
# (tests/bench/hub.py)
bench-hub: $(NATIVE)
	@$(MAKE) --no-print-directory -s hub-binaries >&2
	$(BIN)/python -m tests.bench.hub

# Apache Kafka (KRaft) in the foreground from Maven Central (shared/apache_kafka.py): the first
# line of stdout is KAFKA_BOOTSTRAP_SERVERS=...; Ctrl-C stops it and removes its data.
# APACHE_KAFKA_NODES=3 starts a three-node cluster. Needs Java 17 and Maven.
# The install step, when due, reports on stderr: stdout starts with the bootstrap line.
apache-kafka:
	@$(MAKE) --no-print-directory -s $(STAMP) >&2
	@$(BIN)/python -m fleetplace.shared.apache_kafka

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build
	find shared services -name '*.so' -delete
