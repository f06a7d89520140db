// Package artifacts finds an image's supply-chain artifacts (signatures,
// attestations, SBOMs) by the conventions registries keep them under:
// cosign's tag scheme, the OCI 1.1 referrers API and its tag-schema
// fallback, and walks each to its blobs with the one walker, so that a
// signature a garbage collector left dangling, or whose layer is gone, is
// told apart from one that is whole. It proves presence, not
// cryptographic validity.
//
// Use:
//
//	f := artifacts.NewFinder(s) // s is the *scan.Scanner whose registry it asks
//	set, err := f.Find(ctx, repo, "sha256:…") // repo as s.Parse gave it
//	switch set.Presence(artifacts.Query{Kind: artifacts.Signature}) {
//	case artifacts.Present: // a whole signature of the image's own digest
//	case artifacts.Missing: // the registry proved none whole is there
//	case artifacts.Unknown: // faults hid the answer: never call it missing
//	}
//
// Find returns an error only for a subject that is not a digest; every
// registry failure is a fault in Set.Faults or an Artifact's Findings.
// For an index subject it looks, as cosign does, under the index's digest
// and under each child's (Artifact.Subject and Platform say which).
// NewSourceFinder reads any Source instead (gc-check reads a registry's
// storage as it is and as a collector run would leave it).
// Option: WithConcurrency bounds the subjects looked at in parallel.
// Everything is read through the Scanner (s.Reader() for tags, manifests
// and blobs, s.RepositoryTags, s.Referrers), so its retries, auth, memory
// and request counting apply.
package artifacts
