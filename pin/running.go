package pin

import (
	"cmp"
	"fmt"
	"time"

	"github.com/regcheck/regcheck/imageref"
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
		rs := h.Find(queryOf(img, cluster))
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

// RunningAt is RunningFrom at time t: it looks up, in h, the digest a
// manifest's workload container ran at t (record.History.At: the watcher's
// transitions, else the records seen at t, else the last seen before it),
// to pin a workload back to what ran before an unplanned upgrade. Two
// answers are an *AmbiguousError as for RunningFrom: records of one
// cluster that name several digests at t (Rollout), or, with no cluster
// given, clusters that ran different digests at t.
//
// A digest that ran under another image string than the manifest's (its
// repository or tag changed since t: a planned rollout) is not pinned
// back: ErrNoRecord, for there is no record of this reference at t.
func RunningAt(h *record.History, cluster string, t time.Time) func(yamlfile.Image) (string, error) {
	return func(img yamlfile.Image) (string, error) {
		if img.Kind == "Compose" || img.Kind == "Kustomization" {
			return "", ErrNoRecord
		}
		ran := h.At(queryOf(img, cluster), t)
		if len(ran) == 0 {
			return "", fmt.Errorf("%w at %s", ErrNoRecord, t.UTC().Format(time.RFC3339))
		}
		if err := sameImage(ran, img.Ref, t); err != nil {
			return "", err
		}
		byCluster, pods := map[string]string{}, map[string]string{}
		rollout := false
		for _, r := range ran {
			if d, ok := byCluster[r.Cluster]; ok && d != r.Digest {
				rollout = true
			}
			byCluster[r.Cluster] = r.Digest
			pods[r.Cluster+" pod "+r.Pod] = r.Digest
		}
		switch {
		case rollout:
			return "", fmt.Errorf("%w; its pods ran different digests at %s (a rollout?): choose another time, or pin by tag",
				&AmbiguousError{Digests: pods, Rollout: true}, t.UTC().Format(time.RFC3339))
		case len(byCluster) > 1 && !allSame(byCluster):
			return "", &AmbiguousError{Digests: byCluster}
		}
		return ran[0].Digest, nil
	}
}

// sameImage checks that what ran at t ran under ref's repository and tag
// (a missing tag is latest; digests are not compared): a record of
// another image string is not what to pin ref back to.
func sameImage(ran []record.Ran, ref string, t time.Time) error {
	want, err := imageref.Parse(ref)
	if err != nil {
		return nil // pin reports a reference it cannot parse itself
	}
	for _, r := range ran {
		got, err := imageref.Parse(r.Image)
		if r.Image == "" || err != nil {
			continue // an old record without its image string
		}
		if got.Repo != want.Repo || cmp.Or(got.Tag, "latest") != cmp.Or(want.Tag, "latest") {
			return fmt.Errorf("%w of %s at %s: it ran %s as %s: the image string changed since, so that is not a pin back",
				ErrNoRecord, ref, t.UTC().Format(time.RFC3339), r.Digest, r.Image)
		}
	}
	return nil
}

// queryOf selects the records of img's workload container (or image
// volume) in cluster; a namespace-less workload is in "default".
func queryOf(img yamlfile.Image, cluster string) record.Query {
	ns := img.Namespace
	if ns == "" {
		ns = "default"
	}
	q := record.Query{Cluster: cluster, Namespace: ns, OwnerKind: img.Kind, OwnerName: img.Name, Container: img.Container}
	if img.Field == yamlfile.FieldImageVolumes {
		q.Container, q.Volume = "", img.Container
	}
	return q
}

// allSame reports whether every value of m is the same.
func allSame(m map[string]string) bool {
	first := ""
	for _, v := range m {
		if first == "" {
			first = v
		} else if v != first {
			return false
		}
	}
	return true
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
