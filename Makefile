# drover's Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO ?= go
BIN := $(CURDIR)/bin
# make test is meant to stay under ~20 minutes on a warm 2-core machine; it takes about 31 at
# 6ea5089 (internal/hub 11 of them, the packages' times summing to 58 minutes). The long matrix is
# test-e2e; the long stories a shorter test of make test also proves are test-long.
TEST_TIMEOUT ?= 25m
# TEST_PARALLEL is how many packages make test runs at once (go test -p). On 2 cores, 4 at a time
# kept the CPU saturated and finished no sooner than 2 (29.8 min against 28.8); on 2026-12-08, 3
# at a time took 24 min 57 s at 972fe5a (CPU 91.5 % busy) against 31 min 2 s with 2 at 6ea5089
# (one run each, the latter with a cold image build): 2 stays the default until more runs agree.
TEST_PARALLEL ?= 2
GO_TEST_FLAGS ?=
# HUB_DOWN is how long make test-hubloss keeps the hub down.
HUB_DOWN ?= 10m
DEMO_FLAGS ?=

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Build the lab's control-plane binaries and promtool into bin/ (only those missing or out of date)
	@hack/build-tools.sh lab

.PHONY: tools-demo
# tools-demo also downloads drover's own modules meanwhile (many at a time, see download in
# hack/build-tools.sh), so `make build` right after it does not wait on the module proxy.
tools-demo: ## Build what the demo runs into bin/ (the lab's binaries without kubectl and promtool)
	@GOMAXPROCS=16 $(GO) mod download >/dev/null 2>&1 & hack/build-tools.sh demo; wait

.PHONY: tools-argocd
tools-argocd: ## Build Argo CD into bin/ and install redis-server, for `drover lab up --gitops argocd` (7-15 min cold)
	@hack/build-tools.sh argocd

.PHONY: tools-postgres
tools-postgres: ## Install Debian's postgresql-15 when PostgreSQL is missing (as root, with apt-get), for the lab's PostgreSQL workload (tools and tools-demo do it too)
	@hack/build-tools.sh postgres

.PHONY: tools-monitoring
tools-monitoring: ## Build a Prometheus server into bin/ (the module of promtool), for make test-monitoring
	@hack/build-tools.sh monitoring

.PHONY: build
build: ## Build bin/drover, stamped with the version (git describe) and commit
	$(GO) build -ldflags '-X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)' -o $(BIN)/drover ./cmd/drover

.PHONY: demo
demo: tools-demo build ## The whole DR story in the lab, drover installed from its release manifests: protect, fail over, fail back, relocate, data checked (DEMO_FLAGS=--keep)
	$(BIN)/drover demo $(DEMO_FLAGS)

# The upstream projects' CRDs the tests compare with are found in $DROVER_UPSTREAM_APIS, the cache
# .cache/upstream-apis, or ../shared/upstream-apis beside the checkout (internal/lab/crds/upstream).
.PHONY: upstream-apis
upstream-apis: ## Download the upstream projects' CRDs the tests compare with, at their pinned commits, into .cache/upstream-apis (sha256 checked)
	@$(GO) run ./hack/upstream-apis

.PHONY: test
# make test downloads the upstream CRDs first when no location holds them; without network the
# two tests that need them skip, saying so (DROVER_REQUIRE_UPSTREAM_APIS=1 makes that a failure).
# hack/helm, the charts' tests through Helm's SDK, is a module of its own (Helm's dependencies stay
# out of drover's go.mod), which ./... does not enter: a line of its own runs it.
test: tools ## Run all tests (unit tests, tests against the lab's real API servers, the e2e subset)
	@$(GO) run ./hack/upstream-apis -if-missing -unavailable-ok
	@hack/test.sh $(GO) $(TEST_TIMEOUT) $(TEST_PARALLEL) $(GO_TEST_FLAGS)

.PHONY: test-e2e
test-e2e: tools tools-argocd ## Run the whole end-to-end matrix (workload x backend x mode), PostgreSQL with its recipe's hooks on both backends, the Argo CD, consistency-group and hub-loss cases (~65 min on 2 cores: ~53 before the two hook cases, which took 834 s together)
	DROVER_E2E=full DROVER_TESTS=long $(GO) test -count=1 -tags argocd -timeout 120m -v $(GO_TEST_FLAGS) ./test/e2e/

.PHONY: test-long
test-long: tools ## Run make test's long tier: the long stories make test skips, each naming the shorter test make test runs in its place (labtest.LongTier; hack/test-long.sh finds them)
	@hack/test-long.sh $(GO) $(TEST_TIMEOUT) -v $(GO_TEST_FLAGS)

.PHONY: test-hubloss
test-hubloss: tools ## Keep the hub down for 10 minutes (HUB_DOWN=...) and check that the groups keep syncing, with their lag with and without the hub printed, on both backends (not part of make test, which keeps it down for 25 s with VolRep and 1 minute with VolSync)
	DROVER_HUB_DOWN=$(HUB_DOWN) $(GO) test -count=1 -run 'TestProtectionGoesOnWithoutTheHub' -timeout 40m -v $(GO_TEST_FLAGS) ./internal/hub/
	DROVER_HUB_DOWN=$(HUB_DOWN) $(GO) test -count=1 -run 'TestVolSyncGoesOnWithoutTheHub' -timeout 40m -v $(GO_TEST_FLAGS) ./internal/agent/vrg/volsynclab/

.PHONY: test-argocd
test-argocd: tools tools-argocd ## Run the tests against a lab with a real Argo CD (-tags argocd; not part of make test)
	$(GO) test -count=1 -tags argocd -timeout $(TEST_TIMEOUT) $(GO_TEST_FLAGS) ./internal/lab/argocd/

.PHONY: test-monitoring
test-monitoring: tools tools-monitoring ## A real Prometheus scrapes the lab (drover installed from its manifests) with drover's rules: the sync-delay alert fires on a lost primary and clears after failover and return; every query of the Grafana dashboard returns data (not part of make test)
	$(GO) test -count=1 -tags monitoring -run 'TestTheSyncDelayAlert' -timeout $(TEST_TIMEOUT) -v $(GO_TEST_FLAGS) ./internal/lab/

.PHONY: test-dashboard
test-dashboard: tools-demo ## Drive the dashboard in headless Chromium (installed with apt-get when missing) against a lab running drover: a failover from the page, followed live; screenshots in _artifacts/dashboard/ (-tags browser; not part of make test)
	@command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; }
	$(GO) test -count=1 -tags browser -run 'TestAFailoverStartedFromThePage' -timeout $(TEST_TIMEOUT) -v $(GO_TEST_FLAGS) ./internal/dashboard/dashlab/

# FUZZ_TARGETS are the fuzz tests, package:Target; make test runs their seed corpora.
FUZZ_TARGETS := ./internal/kubeobjects:FuzzDecodeCapture ./internal/kubeobjects:FuzzCheckCapture ./internal/agent/vrg:FuzzReadMarker \
	./internal/agent/vrg:FuzzEpochClaim ./internal/lab/records:FuzzVerifyWriter ./internal/lab/records:FuzzParse \
	./internal/gateway:FuzzRESTConfig ./internal/objectstore:FuzzProfileFromSecret ./internal/objectstore:FuzzOpenEnvelope \
	./internal/objectstore:FuzzParseKeyring \
	./internal/replication/volsync:FuzzNamesAreValidSubdomains
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: tools ## Fuzz every decoder of data drover did not write itself, FUZZTIME each (default 30s; not part of make test)
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%%:*}; \
	done

# The crash sweep kills the hub or an agent at every CRASH_STRIDE-th write of each action,
# from the CRASH_FIRST-th (CRASH_STRIDE=2 with CRASH_FIRST=1, then 2: every write in two runs).
CRASH_STRIDE ?= 1
CRASH_FIRST ?= 1
# Comma-separated components (hub,east,west) and actions (protect,failover,relocate,unprotect)
# to crash; empty: all.
CRASH_COMPONENTS ?=
CRASH_ACTIONS ?=
.PHONY: crash-sweep
crash-sweep: tools ## Kill the hub and each agent at every write of protect, failover, relocate, unprotect and check the story still holds (~20 s per story, ~170 stories), and drover hub restore at every write, run again after each kill (CRASH_STRIDE=N for every N-th from CRASH_FIRST; CRASH_COMPONENTS, CRASH_ACTIONS to narrow; not part of make test)
	DROVER_CRASH_SWEEP=full DROVER_CRASH_STRIDE=$(CRASH_STRIDE) DROVER_CRASH_FIRST=$(CRASH_FIRST) \
	DROVER_CRASH_COMPONENTS=$(CRASH_COMPONENTS) DROVER_CRASH_ACTIONS=$(CRASH_ACTIONS) $(GO) test -count=1 -timeout 24h -run '^(TestTheHubAndTheAgentsCrashAtTheirWritesAndTheStoryStillHolds|TestAHubRestoreKilledAtAWriteAndRunAgainConverges)$$' -v ./internal/hub/

# The benchmark's sizes; N=100 × 3 PVCs and the 1000-DRPC hub fill take the longest.
BENCH_FLAGS ?= --sizes 1,10,100 --pvcs 1,3 --drpcs 1000 --out bench.md

.PHONY: bench
bench: tools build ## Measure drover at scale in its own lab (.lab-bench): N apps x 1 and 3 PVCs vs the cluster's floor, a 1000-DRPC hub fill; prints a table, writes bench.md (BENCH_FLAGS=...)
	$(BIN)/drover lab bench --dir $(CURDIR)/.lab-bench $(BENCH_FLAGS)

# The soak's cycles and flags; a cycle takes 20 s to 2 minutes on 2 cores, longer when a kill hits an action.
CYCLES ?= 100
SOAK_FLAGS ?= --out soak.md

.PHONY: soak
soak: tools build ## Fail over and relocate one application back and forth CYCLES times (default 100) in its own lab (.lab-soak), killing drover's hub and agents at random; prints a table per cycle and a summary, writes soak.md (SOAK_FLAGS=...; not part of make test)
	$(BIN)/drover lab soak --dir $(CURDIR)/.lab-soak --cycles $(CYCLES) $(SOAK_FLAGS)

# The flood's size; 10,000 DRPlacementControls take the hub about ten minutes to judge on 2 cores.
FLOOD ?= 10000

.PHONY: bench-flood
bench-flood: tools ## One tenant's FLOOD (default 10000) invalid DRPlacementControls of one namespace, and another tenant's failover on the idle hub and beside them; prints both times and the hub's lists of DRPlacementControls (not part of make test, which floods with 200)
	DROVER_FLOOD_DRPCS=$(FLOOD) $(GO) test -count=1 -timeout 90m -run '^TestAFloodOfInvalidDRPCsCostsTheHubsAPIServerNoListEach$$' -v ./internal/hub/

.PHONY: bench-argocd
bench-argocd: tools tools-argocd ## Measure decision change to Synced/Healthy with real Argo CD, with and without the refresh (~5 min)
	$(GO) test -count=1 -tags argocd -run '^$$' -bench . -benchtime 1x -timeout $(TEST_TIMEOUT) ./internal/lab/argocd/

.PHONY: generate
generate: ## Regenerate deepcopy code, CRD YAML and RBAC with the pinned controller-gen, then the charts from them
	@hack/build-tools.sh codegen
	hack/generate.sh
	@$(MAKE) --no-print-directory charts

# The charts' templates and CRDs are generated from config/'s kustomize trees (internal/chart), so
# that a chart rendered with its defaults is the release manifest; values.yaml, the schema and
# the helpers are written by hand.
.PHONY: charts
charts: ## Regenerate the templates and CRDs of charts/drover-hub and charts/drover-agent from config/ (kustomize)
	@hack/build-tools.sh kustomize
	$(GO) run ./hack/charts -kustomize $(BIN)/kustomize

.PHONY: cli-docs
cli-docs: ## Regenerate docs/cli.md's command reference from the commands
	$(GO) test -count=1 -run 'TestCLIDocIsCurrent' ./cmd/drover/ -args -update-cli-doc

.PHONY: verify
verify: generate ## Regenerate and fail when generated files or formatting differ from what is committed
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@for d in . hack/helm hack/tools/*/; do (cd $$d && GOTOOLCHAIN=$$(awk '$$1 == "toolchain" { print $$2 }' go.mod | grep . || echo local) $(GO) mod tidy -diff) || { echo "go mod tidy needed in $$d"; exit 1; }; done
	@git diff --exit-code -- api config internal charts || { echo "generated files are out of date: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api config internal charts)" || { git status --porcelain -- api config internal charts; echo "untracked generated files: commit them"; exit 1; }

# The image the release manifests name. No registry publishes drover's image: the default is the
# local reference `make image` tags; set IMG to the registry you push to (make image-push).
IMG ?= drover:$(VERSION)
DIST := $(CURDIR)/dist

.PHONY: release-manifests
release-manifests: ## Write dist/drover-hub.yaml and dist/drover-agent.yaml (kustomize, image IMG=...)
	@hack/build-tools.sh kustomize
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cp -r config "$$tmp/" && mkdir -p $(DIST) && \
	for c in hub agent; do \
	  (cd "$$tmp/config/$$c" && $(BIN)/kustomize edit set image drover=$(IMG)) && \
	  $(BIN)/kustomize build "$$tmp/config/$$c" >$(DIST)/drover-$$c.yaml.tmp && \
	  mv $(DIST)/drover-$$c.yaml.tmp $(DIST)/drover-$$c.yaml && echo "wrote dist/drover-$$c.yaml ($(IMG))"; \
	done

.PHONY: release
release: release-manifests ## Build dist/release: drover for linux, darwin, windows x amd64, arm64 (version, commit stamped), archives, the release manifests, the Helm charts (.tgz, index.yaml), checksums.txt, a krew manifest (IMG=... names the image)
	@[ "$(origin IMG)" != file ] || echo "note: the manifests and charts name the local image $(IMG); set IMG=registry.example.com/drover:$(VERSION) to name the one you push (make image-push)"
	$(GO) run ./hack/release -version '$(VERSION)' -commit '$(COMMIT)' -created '$(SOURCE_DATE_EPOCH)' \
	  -out $(DIST)/release -manifests $(DIST)/drover-hub.yaml,$(DIST)/drover-agent.yaml \
	  -charts charts/drover-hub,charts/drover-agent -image '$(IMG)' $(RELEASE_FLAGS)

.PHONY: lint
lint: ## Run go vet and golangci-lint (built from the pinned module into bin/)
	$(GO) vet ./...
	@hack/build-tools.sh lint
	$(BIN)/golangci-lint run ./...

.PHONY: lab-up lab-down lab-status
lab-up: tools-demo build ## Start the lab (and build bin/kubectl to explore it)
	@hack/build-tools.sh kubectl
	$(BIN)/drover lab up
lab-down: build ## Stop the lab and remove its state
	$(BIN)/drover lab down
lab-status: build ## Show the lab's clusters
	$(BIN)/drover lab status --verbose

.PHONY: clean
clean: ## Remove bin/drover (keeps the slow-to-build control-plane binaries)
	rm -f $(BIN)/drover

# The image: static binaries (CGO off, -trimpath, stamped with VERSION and COMMIT) packaged by
# hack/image with go-containerregistry, no container engine. Every file and the config carry the
# commit's time (SOURCE_DATE_EPOCH), so the same commit gives the same index digest. Each of these
# is computed once, when first used.
VERSION ?= $(eval VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev))$(VERSION)
COMMIT ?= $(eval COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown))$(COMMIT)
SOURCE_DATE_EPOCH ?= $(eval SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 0))$(SOURCE_DATE_EPOCH)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
# The platform of the one image in dist/drover-image.tar; empty means this machine's.
IMAGE_TARBALL_PLATFORM ?=
VERSION_PKG := github.com/drover-io/drover/internal/version
IMAGE_LDFLAGS = -s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)

.PHONY: image-binaries image image-push
# image-binaries builds static drover binaries for IMAGE_PLATFORMS into dist/bin/<os>_<arch>/.
image-binaries:
	@for p in $$(tr , ' ' <<<'$(IMAGE_PLATFORMS)'); do os=$${p%/*}; arch=$${p#*/}; \
	  echo "building dist/bin/$${os}_$${arch}/drover ($(VERSION))"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(IMAGE_LDFLAGS)' \
	    -o $(DIST)/bin/$${os}_$${arch}/drover ./cmd/drover; \
	done

image: image-binaries ## Build the image (linux/amd64+arm64, no Docker): dist/image (OCI layout), dist/drover-image.tar (docker/podman load)
	@$(GO) run ./hack/image build -bin-dir $(DIST)/bin -platforms '$(IMAGE_PLATFORMS)' \
	  -version '$(VERSION)' -commit '$(COMMIT)' -created '$(SOURCE_DATE_EPOCH)' -tag '$(IMG)' \
	  -layout $(DIST)/image -tarball $(DIST)/drover-image.tar $(if $(IMAGE_TARBALL_PLATFORM),-tarball-platform '$(IMAGE_TARBALL_PLATFORM)')

image-push: ## Build and push the image index: IMG=registry.example.com/drover:tag make image-push (INSECURE=1 for plain HTTP)
	@[ "$(origin IMG)" != file ] || { echo "Set IMG to the reference to push to, e.g. IMG=registry.example.com/drover:v0.1.0 make image-push"; exit 1; }
	@$(MAKE) --no-print-directory image
	@$(GO) run ./hack/image push -layout $(DIST)/image -ref '$(IMG)' $(if $(INSECURE),-insecure)
