#!/usr/bin/env bash
# Builds the real registry, etcd and kube-apiserver binaries that the demo and
# the integration tests run, and the crane that make bench runs beside
# regcheck, and the helm and kustomize CLIs the oracle test holds regcheck's
# inventory to, and the admission engines (the Kyverno CLI, policy-controller's
# policy-tester) the admission verdicts are held to, into a cache folder
# outside the clone keyed by version. A binary
# already there is not rebuilt: cold, all of them take about 20 minutes on 2
# cores; warm, this script takes well under a second.
#
# usage: hack/build-bins.sh [registry|cluster|s3|metrics|containerd|crane|cosign|crio|helm|kustomize|engines|flux|bench|all]   (default: all)
#   registry  the two registries (all make demo needs)
#   cluster   etcd and kube-apiserver
#   s3        the S3 server (gofakes3) the s3-backed registry tests store into
#   metrics   the Pushgateway and promtool the metrics and alert tests run
#   containerd  containerd and ctr, whose content store the rescue tests restore from
#   crane     go-containerregistry's crane, which make bench runs beside regcheck
#   cosign    sigstore's cosign, which the artifact tests sign, attest and verify with
#   crio      crio-registries (tools/crio-registries): containers/image's sysregistriesv2,
#             which CRI-O reads registries.conf with, for the pull path's differential test
#   helm      the Helm v3 CLI, the ground truth the oracle test holds chart inventories to
#   kustomize the kustomize v5 CLI, the ground truth for kustomize trees (its api is regcheck's)
#   engines   the admission engines the admission verdicts are held to: the Kyverno CLI
#             (tools/kyverno) and policy-controller's policy-tester (tools/policy-tester)
#   flux      the Flux CLI, the ground truth for Flux Kustomizations (flux build kustomization)
#   bench     what make bench runs: the registries, etcd and kube-apiserver, crane
set -euo pipefail

REGISTRY3_VERSION=v3.1.2
REGISTRY2_VERSION=v2.8.3
ETCD_VERSION=v3.7.3
KUBE_VERSION=v1.37.2
S3SERVER_VERSION=v1.2.0 # github.com/johannesboyne/gofakes3, pinned in tools/s3server/go.mod
PUSHGATEWAY_VERSION=v1.11.3 # pinned in tools/pushgateway/go.mod
PROMETHEUS_VERSION=v0.316.0 # the Go module of Prometheus v3.16.0, for promtool
CONTAINERD_VERSION=v2.4.2
CRANE_VERSION=v0.22.1 # github.com/google/go-containerregistry, as regcheck's go.mod requires it
COSIGN_VERSION=v3.1.3 # github.com/sigstore/cosign/v3, the newest v3 the proxy served
CRIO_IMAGE_VERSION=v5.42.1 # go.podman.io/image/v5, pinned in tools/crio-registries/go.mod
HELM_VERSION=v3.21.4 # helm.sh/helm/v3, the CLI (regcheck links Helm v4's engine)
KUSTOMIZE_VERSION=v5.8.2 # sigs.k8s.io/kustomize/kustomize/v5, whose api v0.21.2 regcheck's go.mod has
KYVERNO_VERSION=v1.19.1 # github.com/kyverno/kyverno, pinned in tools/kyverno/go.mod
POLICY_CONTROLLER_VERSION=v0.13.1 # github.com/sigstore/policy-controller, pinned in tools/policy-tester/go.mod
FLUX_VERSION=v2.9.5 # github.com/fluxcd/flux2/v2, the Flux CLI (flux build kustomization)

top=$(cd "$(dirname "$0")/.." && pwd)
bin=${REGCHECK_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/regcheck/bin}
mkdir -p "$bin"

# build NAME CMD...: runs CMD with $out set to a temp path, then moves it into
# place, so an interrupted build never leaves a half-written binary behind.
build() {
	local name=$1; shift
	if [ -x "$bin/$name" ]; then return 0; fi
	echo "building $bin/$name (cold build, this takes minutes)" >&2
	local start=$SECONDS
	out="$bin/.$name.$$"
	"$@"
	mv -f "$out" "$bin/$name"
	echo "built $name in $((SECONDS - start))s" >&2
}

registry3() {
	local gobin
	gobin=$(mktemp -d)
	GOBIN=$gobin GOFLAGS=-trimpath go install "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY3_VERSION"
	mv "$gobin/registry" "$out"
	rmdir "$gobin"
}
registry2() { (cd "$top/tools/registry2" && go build -mod=readonly -trimpath -o "$out" github.com/docker/distribution/cmd/registry); }
etcd() { (cd "$top/tools/etcd" && go build -mod=readonly -trimpath -ldflags="-s -w" -o "$out" .); }
s3server() { (cd "$top/tools/s3server" && go build -mod=readonly -trimpath -ldflags="-s -w" -o "$out" .); }
pushgateway() { (cd "$top/tools/pushgateway" && go build -mod=readonly -trimpath -ldflags="-s -w" -o "$out" github.com/prometheus/pushgateway); }
# The Pushgateway is built through a module of ours (tools/pushgateway): go
# install NAME@VERSION asks the proxy for the module's version list, which
# is not served for it. Prometheus's go.mod has no replace or exclude
# directives and its list is served: go install builds promtool alone, not
# the whole of Prometheus (about 11 minutes cold on 2 cores under load; the
# Pushgateway about 2).
promtool() {
	local gobin
	gobin=$(mktemp -d)
	GOBIN=$gobin GOFLAGS=-trimpath go install -ldflags="-s -w" "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"
	mv "$gobin/promtool" "$out"
	rmdir "$gobin"
}
# containerd's go.mod has no replace directives: go install builds it as
# released, without the storage drivers that need cgo (about 2 minutes cold).
containerd_cmd() {
	local gobin
	gobin=$(mktemp -d)
	GOBIN=$gobin CGO_ENABLED=0 GOFLAGS=-trimpath go install -tags "no_btrfs no_devmapper no_zfs" -ldflags="-s -w" "github.com/containerd/containerd/v2/cmd/$1@$CONTAINERD_VERSION"
	mv "$gobin/$1" "$out"
	rmdir "$gobin"
}
# goinstall NAME PKG@VERSION: go install of a module as released (no cgo,
# stripped) into $out, for a module whose go.mod has no replace
# directives.
goinstall() {
	local gobin
	gobin=$(mktemp -d)
	GOBIN=$gobin CGO_ENABLED=0 GOFLAGS=-trimpath go install -ldflags="-s -w" "$2"
	mv "$gobin/$1" "$out"
	rmdir "$gobin"
}
# crane is in go-containerregistry's main module, which has no replace
# directives: go install builds it as released (seconds when regcheck's
# own build has compiled go-containerregistry already).
crane() { goinstall crane "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"; }
# cosign's go.mod has no replace or exclude directives: go install builds
# it as released (6m16s cold on 2 cores, its module downloads included).
cosign() { goinstall cosign "github.com/sigstore/cosign/v3/cmd/cosign@$COSIGN_VERSION"; }
# go.podman.io/image/v5 with the tags that need no C library (no gpgme, no
# btrfs headers): 43 non-standard packages, about 45 s when the standard
# library is already compiled, 6.5 min with an empty build cache on 2 busy
# cores.
crioregistries() { (cd "$top/tools/crio-registries" && CGO_ENABLED=0 go build -mod=readonly -trimpath -tags containers_image_openpgp,exclude_graphdriver_btrfs -ldflags="-s -w" -o "$out" .); }
# Helm v3's go.mod has no replace or exclude directives: go install builds
# the CLI as released.
helm() { goinstall helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"; }
# kustomize v5.8.2's go.mod has no replace directives either: go install
# builds the CLI as released, on the kustomize api regcheck links.
kustomize() { goinstall kustomize "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"; }
# Kyverno's and policy-controller's go.mod files have replace directives,
# which go install NAME@VERSION refuses: each is built through a module of
# ours that copies them (tools/kyverno, tools/policy-tester), as registry2 is.
# Cold (2026-12-07, 2 cores shared with four other builds, load 15-24):
# the Kyverno CLI 30 min (1806 s, 3032 packages), policy-tester 19 min
# (1157 s, after Kyverno had compiled what they share).
kyverno() { (cd "$top/tools/kyverno" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags="-s -w" -o "$out" github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno); }
policytester() { (cd "$top/tools/policy-tester" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags="-s -w" -o "$out" github.com/sigstore/policy-controller/cmd/tester); }
# flux2's go.mod has a replace directive (go install refuses it) and
# cmd/flux embeds manifests/*.yaml, flux install's manifests, which make
# generates from GitHub releases and the module zip does not hold: the
# module is copied from the module cache, given one placeholder manifest
# (flux install and bootstrap are never run from it) and built as its own
# main module, its replace applied (32 minutes cold at nice 19 on 2 cores
# under a load average of 26, its module downloads included).
flux() {
	local src dir
	dir=$(go mod download -json "github.com/fluxcd/flux2/v2@$FLUX_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	src=$(mktemp -d)
	cp -r "$dir/." "$src"
	chmod -R u+w "$src"
	mkdir -p "$src/cmd/flux/manifests"
	echo "# placeholder: flux install's manifests are generated by make, not in the module" >"$src/cmd/flux/manifests/placeholder.yaml"
	(cd "$src" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags="-s -w -X main.VERSION=${FLUX_VERSION#v}" -o "$out" ./cmd/flux)
	rm -rf "$src"
}
apiserver() { (cd "$top/tools/kube-apiserver" && go build -mod=readonly -trimpath -ldflags="-s -w" -o "$out" k8s.io/kubernetes/cmd/kube-apiserver); }

what=${1:-all}
case $what in
registry|bench|all)
	build "registry-$REGISTRY2_VERSION" registry2
	build "registry-$REGISTRY3_VERSION" registry3
	;;&
cluster|bench|all)
	build "etcd-$ETCD_VERSION" etcd
	build "kube-apiserver-$KUBE_VERSION" apiserver
	;;&
s3|all)
	build "s3server-$S3SERVER_VERSION" s3server
	;;&
metrics|all)
	build "pushgateway-$PUSHGATEWAY_VERSION" pushgateway
	build "promtool-$PROMETHEUS_VERSION" promtool
	;;&
containerd|all)
	build "containerd-$CONTAINERD_VERSION" containerd_cmd containerd
	build "ctr-$CONTAINERD_VERSION" containerd_cmd ctr
	;;&
crane|bench|all)
	build "crane-$CRANE_VERSION" crane
	;;&
cosign|all)
	build "cosign-$COSIGN_VERSION" cosign
	;;&
crio|all)
	build "crio-registries-$CRIO_IMAGE_VERSION" crioregistries
	;;&
helm|all)
	build "helm-$HELM_VERSION" helm
	;;&
kustomize|all)
	build "kustomize-$KUSTOMIZE_VERSION" kustomize
	;;&
engines|all)
	build "kyverno-$KYVERNO_VERSION" kyverno
	build "policy-tester-$POLICY_CONTROLLER_VERSION" policytester
	;;&
flux|all)
	build "flux-$FLUX_VERSION" flux
	;;
registry|cluster|s3|metrics|containerd|crane|cosign|crio|helm|kustomize|engines|flux|bench) ;;
*) echo "usage: $0 [registry|cluster|s3|metrics|containerd|crane|cosign|crio|helm|kustomize|engines|flux|bench|all]" >&2; exit 2 ;;
esac
echo "$bin"
