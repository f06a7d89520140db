// Package cleanup models the registry cleanups teams run beside (or instead
// of) a garbage collector: GitHub's cleanup actions for GHCR, ECR lifecycle
// policies, GitLab cleanup policies and Harbor tag retention. Each model is
// a pure function of a policy, one repository as the registry holds it and
// a time: which tags and manifests one run deletes (or archives), by which
// rule, from when, and what in the policy's own terms would have kept each.
//
// The repository comes from regcheck's own walk of the registry (tags,
// indexes and their children, referrers and cosign's tags) with the times
// the OCI API does not serve read from the service's own export
// (ReadState). Package gc crosses the deletions with the images in use.
package cleanup
