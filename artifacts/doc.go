// Package artifacts finds an image's supply-chain artifacts (signatures,
// attestations, SBOMs) by the conventions registries keep them under:
// cosign's tag scheme, the OCI 1.1 referrers API and its tag-schema
// fallback, and walks each to its blobs with the one walker, so that a
// signature a garbage collector left dangling, or whose layer is gone, is
// told apart from one that is whole. It proves presence, not
// cryptographic validity.
package artifacts
