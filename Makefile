# regcheck. Two set-up commands on a fresh machine with only Go:
#   make demo   the seed incident reproduced on a real registry, and diagnosed
#   make test   every test, the end-to-end ones against real binaries included
#
# The registry, etcd and kube-apiserver binaries the tests run are built once
# into $(REGCHECK_BIN), outside the clone, keyed by version.

GO          ?= go
REGCHECK_BIN ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/regcheck/bin
export REGCHECK_BIN
TEST_FLAGS  ?= -count=1 -timeout 50m
PKGS        := ./...

.PHONY: all build dist image test unit integration demo bench soak lint bins bins-registry bins-bench clean docs fuzz deploy

all: build

VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# kustomize (render/) links Go's plugin package for Go-plugin transformers,
# which regcheck never loads: this tag leaves it out (about 20 MB).
BUILD_TAGS  ?= kustomize_disable_go_plugin_support

build:
	$(GO) build -tags $(BUILD_TAGS) -ldflags "-X github.com/regcheck/regcheck/internal/version.stamped=$(VERSION)" -o bin/regcheck ./cmd/regcheck

# Release binaries into dist/ (hack/dist): regcheck_VERSION_OS_ARCH(.exe)
# for DIST_PLATFORMS (static, -trimpath, the version stamped), the same
# named kubectl-regcheck (a kubectl plugin) in kubectl-regcheck_VERSION_OS_ARCH.tar.gz
# (krew's archive), an SPDX SBOM of each, checksums.txt (sha256sum -c checksums.txt) and the krew
# manifest with the archives' sha256 filled in (regcheck.krew.yaml).
DIST_PLATFORMS ?= linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64
dist:
	$(GO) run ./hack/dist -out dist -version $(VERSION) -tags $(BUILD_TAGS) -platform $(DIST_PLATFORMS)

# regcheck's container image, without a Docker engine (hack/image): static,
# non-root, no base image, the same digest from the same sources, Go and CA
# bundle. Pushed to IMAGE (make image IMAGE=127.0.0.1:5000/regcheck:dev, with
# ~/.docker/config.json's credentials); without IMAGE, an OCI layout in
# bin/image. PLATFORMS=linux/amd64,linux/arm64 makes an index.
IMAGE       ?=
PLATFORMS   ?=
image:
	$(GO) run ./hack/image -version $(VERSION) $(if $(PLATFORMS),-platform $(PLATFORMS)) $(if $(IMAGE),-push $(IMAGE),-layout bin/image)

# The registry binaries (docker/distribution v2.8.3, distribution v3.1.2).
bins-registry:
	hack/build-bins.sh registry

# What make bench runs: the registries, etcd and kube-apiserver, and crane
# v0.22.1 to compare with.
bins-bench:
	hack/build-bins.sh bench

# All test binaries: the registries plus etcd and kube-apiserver.
bins:
	hack/build-bins.sh all

# Every test: unit tests and the end-to-end tests against real registries and
# a real API server.
# REGCHECK_REQUIRE_BINS: a test that cannot find its binary fails here
# (internal/testing/bins.Require) instead of skipping, as under CI.
test: bins
	$(GO) vet -tags integration $(PKGS)
	REGCHECK_REQUIRE_BINS=1 $(GO) test -tags integration $(TEST_FLAGS) $(PKGS)

# The fast loop: unit tests only.
unit:
	$(GO) test $(TEST_FLAGS) $(PKGS)

integration: bins
	$(GO) test -tags integration $(TEST_FLAGS) ./integration/

demo: build bins-registry
	$(GO) run ./hack/demo -regcheck bin/regcheck

# Benchmarks print their figures; none of them asserts a time. The
# comparison with crane and the scale figures (BENCH_ONCE) push thousands
# of images each, so they run once; the others three times. About 7
# minutes on 2 cores once the binaries are built.
BENCH_ONCE  := ^Benchmark(Compare|Scale|Watch)$$
bench: bins-bench
	$(GO) test -tags integration -run '^$$' -bench . -skip '$(BENCH_ONCE)' -benchmem -benchtime 3x $(PKGS)
	$(GO) test -tags integration -run '^$$' -bench '$(BENCH_ONCE)' -benchmem -benchtime 1x -timeout 30m ./integration/

# The watcher's memory over SOAK of status changes without a pause
# (BenchmarkWatchSoak: 10,000 pods, 200 changes a second, its memory read
# every 10 minutes). An hour by default; not part of make bench.
SOAK        ?= 60m
soak: bins-bench
	WATCH_SOAK_DURATION=$(SOAK) $(GO) test -tags integration -run '^$$' -bench '^BenchmarkWatchSoak$$' -benchtime 1x -timeout 3h ./integration/

# Every fuzz test (func FuzzX in a _test.go file), each for FUZZTIME, one
# after another. go test replays their committed corpora
# (testdata/fuzz/FuzzX/) and seeds without -fuzz; a new input that fails
# is written there too: commit it with the fix.
FUZZTIME    ?= 20s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$(dirname $$f) $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$(dirname $$f); \
		done; \
	done

# The command reference, docs/cli/*.md, generated from the cobra commands;
# go test ./internal/cli/ fails when it is stale.
docs:
	$(GO) run ./hack/docs -out docs/cli

# deploy/'s manifests, rendered from the Helm chart charts/regcheck with
# Helm's engine (hack/deploy): the chart's defaults plus the namespace and
# the image placeholder the kustomizations replace. go test ./charts/ fails
# when they are stale. The alerts come from metrics/rules.go first:
# go test ./metrics -run TestRulesFiles -update.
deploy:
	$(GO) run ./hack/deploy -out deploy

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags integration $(PKGS)

clean:
	rm -rf bin dist
