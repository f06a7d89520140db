// Package admission reads the cluster's image policies (Kyverno
// verifyImages rules, sigstore policy-controller ClusterImagePolicies),
// says which of them apply to each use of an image, and turns the
// signatures and attestations they require, as the artifacts package
// finds them, into findings: a required artifact that is gone or not
// whole is a pod the cluster will refuse. It proves presence, not
// cryptographic validity.
package admission
