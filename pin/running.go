package pin

import (
	"fmt"

	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/yamlfile"
)

// RunningFrom returns a Config.Running that looks up, in h, the digest last
// seen running for a manifest's workload container (or mounted by its image
// volume), in cluster ("" for any). A namespace-less workload is looked up in "default". Compose
// services and kustomize entries have no workload: ErrNoRecord.
//
// Which digest runs is not for pin to guess, so two answers are an
// *AmbiguousError: pods of the workload seen on different digests at its
// latest record (a rollout under way; Rollout is set), or, with no cluster
// given, clusters whose newest records differ (a manifest is deployed to
// one cluster, and which one is the caller's to say).
func RunningFrom(h *record.History, cluster string) func(yamlfile.Image) (string, error) {
	return func(img yamlfile.Image) (string, error) {
		if img.Kind == "Compose" || img.Kind == "Kustomization" {
			return "", ErrNoRecord
		}
		ns := img.Namespace
		if ns == "" {
			ns = "default"
		}
		q := record.Query{Cluster: cluster, Namespace: ns, OwnerKind: img.Kind, OwnerName: img.Name, Container: img.Container}
		if img.Field == yamlfile.FieldImageVolumes {
			q.Container, q.Volume = "", img.Container
		}
		rs := h.Find(q)
		if len(rs) == 0 {
			return "", ErrNoRecord
		}
		if pods := rollout(rs); pods != nil {
			return "", fmt.Errorf("%w; its pods run different digests (a rollout?): pin once it is done, or pin by tag",
				&AmbiguousError{Digests: pods, Rollout: true})
		}
		// Each cluster's newest record (rs is newest first).
		newest := map[string]string{}
		for _, r := range rs {
			if _, ok := newest[r.Cluster]; !ok {
				newest[r.Cluster] = r.Digest
			}
		}
		for _, d := range newest {
			if d != rs[0].Digest {
				return "", &AmbiguousError{Digests: newest}
			}
		}
		return rs[0].Digest, nil
	}
}

// rollout returns, when the newest records rs (newest first) of one
// workload container are of pods seen at once on different digests, the
// digest of each of those pods ("cluster pod name"); nil otherwise.
func rollout(rs []record.Record) map[string]string {
	if len(rs) < 2 || rs[1].Cluster != rs[0].Cluster || !rs[1].LastSeen.Equal(rs[0].LastSeen) || rs[1].Digest == rs[0].Digest {
		return nil
	}
	pods := map[string]string{}
	for _, r := range rs {
		if r.Cluster == rs[0].Cluster && r.LastSeen.Equal(rs[0].LastSeen) {
			pods[r.Cluster+" pod "+r.Pod] = r.Digest
		}
	}
	return pods
}
