// Package mirrorsets reads an OpenShift cluster's mirror sets
// (config.openshift.io/v1 ImageDigestMirrorSet and ImageTagMirrorSet,
// operator.openshift.io/v1alpha1 ImageContentSourcePolicy, and the
// insecure registries of images.config.openshift.io/cluster) and renders
// the registries.conf the Machine Config Operator writes to every node from
// them, for package pullpath to walk as CRI-O pulls.
//
// The rules are the MCO's renderer, openshift/runtime-utils
// pkg/registries/registries.go (EditRegistriesConfig, as the MCO's
// pkg/controller/container-runtime-config calls it), read at commit
// 7bdb5b9c177bb6cffa97b556a0685e3db10706a6:
//
//   - IDMS and ICSP entries become mirrors with pull-from-mirror =
//     "digest-only" (mergedDigestMirrorSets; addMirrorsToRegistries with
//     sysregistriesv2.MirrorByDigestOnly), ITMS entries mirrors with
//     "tag-only" (mergedTagMirrorSets, MirrorByTagOnly). The API documents
//     the same (openshift/api config/v1 types_image_digest_mirror_set.go:
//     "Images can be pulled from these mirrors only if they are referenced
//     by their digests"; types_image_tag_mirror_set.go: "... by their
//     tags").
//   - Entries of one kind family for one source are merged: each entry's
//     mirrors, in order, then the source, are edges of a graph sorted
//     topologically, ties and loops broken by name (mergedMirrors, topo.go);
//     (B, C) and (A, B) give (A, B, C). The source itself is dropped from
//     the end.
//   - An entry whose mirrors are all the source (or none) is no mirror set,
//     and its mirrorSourcePolicy is ignored (addMirrorSet).
//   - mirrorSourcePolicy: NeverContactSource on any entry of a source
//     blocks the source: blocked = true on its [[registry]].
//   - One [[registry]] per source: location = source, or prefix = source
//     for a wildcard "*.host"; digest mirrors first, then tag mirrors
//     (getRegistryEntry, called for the digest sets before the tag sets).
//   - The cluster's insecure registries (images.config.openshift.io
//     cluster, spec.registrySources.insecureRegistries) set insecure = true
//     on their own [[registry]] and on every registry and mirror nested in
//     their scope (ScopeIsNestedInsideScope).
package mirrorsets
