// Package integration holds regcheck's end-to-end tests: real registry
// binaries (docker/distribution 2.8.3 and distribution 3.x) and a real
// kube-apiserver with etcd, started as processes on 127.0.0.1. They run with
// `go test -tags integration ./integration/` (make test does) after
// hack/build-bins.sh has built the binaries.
package integration
