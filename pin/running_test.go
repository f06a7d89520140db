package pin

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
	"github.com/regcheck/regcheck/yamlfile"
)

func TestRunningFrom(t *testing.T) {
	t.Parallel()
	a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	t1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	entry := func(ns, name, pod, digest string) recordresult.Entry {
		return recordresult.Entry{Namespace: ns, OwnerKind: "Deployment", OwnerName: name, Pod: pod, Container: "app", Digest: digest}
	}
	snap := func(cluster string, at time.Time, es ...recordresult.Entry) recordresult.Snapshot {
		return recordresult.Snapshot{Cluster: cluster, Time: at, Entries: es}
	}
	h := record.NewHistory()
	for _, s := range []recordresult.Snapshot{
		snap("prod", t1, entry("default", "api", "api-1", a), entry("shop", "web", "web-1", a),
			entry("default", "moved", "moved-1", a), entry("default", "nodigest", "nodigest-1", "")),
		snap("prod", t2, entry("default", "moved", "moved-2", b),
			entry("default", "roll", "roll-old", a), entry("default", "roll", "roll-new", b)),
		snap("staging", t2, entry("default", "api", "api-1", b), entry("shop", "web", "web-1", a)),
		// Deployment ml/serve: container app runs a, its image volume app
		// (the same name) mounts b.
		snap("prod", t2, entry("ml", "serve", "serve-1", a),
			recordresult.Entry{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Volume: "app", Digest: b}),
	} {
		h.Merge(s)
	}
	deployment := func(ns, name string) yamlfile.Image {
		return yamlfile.Image{Kind: "Deployment", Namespace: ns, Name: name, Container: "app"}
	}
	for _, tc := range []struct {
		name    string
		cluster string
		img     yamlfile.Image
		want    string
		err     error             // matched with errors.Is, when set
		amb     map[string]string // the AmbiguousError's digests, when one is wanted
		rollout bool
		msg     string // a part of the error's text
	}{
		{"one cluster", "prod", deployment("", "api"), a, nil, nil, false, ""},
		{"a namespace-less workload is in default", "staging", deployment("", "api"), b, nil, nil, false, ""},
		{"its namespace", "prod", deployment("shop", "web"), a, nil, nil, false, ""},
		{"not another namespace", "prod", deployment("", "web"), "", ErrNoRecord, nil, false, ""},
		{"clusters that agree", "", deployment("shop", "web"), a, nil, nil, false, ""},
		{"the newest record wins", "prod", deployment("default", "moved"), b, nil, nil, false, ""},
		{"clusters that disagree", "", deployment("", "api"), "", nil,
			map[string]string{"prod": a, "staging": b}, false, "the records disagree: prod runs " + a + ", staging runs " + b},
		{"a rollout", "prod", deployment("", "roll"), "", nil,
			map[string]string{"prod pod roll-old": a, "prod pod roll-new": b}, true, "its pods run different digests (a rollout?)"},
		{"no record", "", deployment("", "other"), "", ErrNoRecord, nil, false, ""},
		{"no record in that cluster", "staging", deployment("", "moved"), "", ErrNoRecord, nil, false, ""},
		{"a record without a digest", "", deployment("", "nodigest"), "", ErrNoRecord, nil, false, ""},
		{"compose has no workload", "", yamlfile.Image{Kind: "Compose", Name: "api", Container: "app"}, "", ErrNoRecord, nil, false, ""},
		{"kustomize has no workload", "", yamlfile.Image{Kind: "Kustomization", Container: "app"}, "", ErrNoRecord, nil, false, ""},
		{"a container beside an image volume of its name", "prod", deployment("ml", "serve"), a, nil, nil, false, ""},
		{"an image volume", "prod", yamlfile.Image{Kind: "Deployment", Namespace: "ml", Name: "serve", Container: "app", Field: yamlfile.FieldImageVolumes}, b, nil, nil, false, ""},
		{"an image volume never recorded", "prod", yamlfile.Image{Kind: "Deployment", Namespace: "shop", Name: "web", Container: "app", Field: yamlfile.FieldImageVolumes}, "", ErrNoRecord, nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := RunningFrom(h, tc.cluster)(tc.img)
			if got != tc.want {
				t.Errorf("digest %q, want %q", got, tc.want)
			}
			var amb *AmbiguousError
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Errorf("error %v, want %v", err, tc.err)
				}
			case tc.amb != nil:
				if !errors.As(err, &amb) || !maps.Equal(amb.Digests, tc.amb) || amb.Rollout != tc.rollout {
					t.Fatalf("error %#v, want an AmbiguousError of %v (rollout %v)", err, tc.amb, tc.rollout)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %q lacks %q", err, tc.msg)
				}
			case err != nil:
				t.Errorf("error %v", err)
			}
		})
	}
}

// RunningAt pins back: after an unplanned upgrade from a to b, the digest
// that ran just before it, not the latest.
func TestRunningAt(t *testing.T) {
	t.Parallel()
	a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	upgrade := t0.Add(time.Hour)
	entry := func(name, pod, digest string) recordresult.Entry {
		return recordresult.Entry{Namespace: "web", OwnerKind: "Deployment", OwnerName: name, Pod: pod, Container: "app", Image: "app:latest", Digest: digest}
	}
	h := record.NewHistory()
	for _, s := range []recordresult.Snapshot{
		{Cluster: "prod", Time: t0, Entries: []recordresult.Entry{entry("app", "app-1", a), entry("roll", "roll-1", a), entry("roll", "roll-2", b), entry("split", "split-1", a)}},
		{Cluster: "staging", Time: t0, Entries: []recordresult.Entry{entry("split", "split-9", b), entry("same", "same-9", a)}},
		{Cluster: "prod", Time: t0, Entries: []recordresult.Entry{entry("same", "same-1", a)}},
		{Cluster: "prod", Time: upgrade.Add(time.Second), Entries: []recordresult.Entry{entry("app", "app-1", b)}},
	} {
		h.Merge(s)
	}
	h.AddTransitions(
		record.Transition{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: "app", Container: "app", Image: "app:latest", From: "", To: a, Time: t0},
		record.Transition{Cluster: "prod", Namespace: "web", OwnerKind: "Deployment", OwnerName: "app", Container: "app", Image: "app:latest", PreviousImage: "app:latest", From: a, To: b, Time: upgrade},
	)
	deployment := func(name string) yamlfile.Image {
		return yamlfile.Image{Kind: "Deployment", Namespace: "web", Name: name, Container: "app", Ref: "app:latest"}
	}
	for _, tc := range []struct {
		name    string
		cluster string
		img     yamlfile.Image
		at      time.Time
		want    string
		err     error
		amb     map[string]string
		rollout bool
		msg     string // a part of the error's text
	}{
		{"just before the upgrade", "prod", deployment("app"), upgrade.Add(-time.Second), a, nil, nil, false, ""},
		{"any cluster", "", deployment("app"), upgrade.Add(-time.Second), a, nil, nil, false, ""},
		{"after it", "prod", deployment("app"), upgrade, b, nil, nil, false, ""},
		{"before anything ran", "prod", deployment("app"), t0.Add(-time.Second), "", ErrNoRecord, nil, false, ""},
		{"a rollout at that time", "prod", deployment("roll"), t0, "", nil, map[string]string{"prod pod roll-1": a, "prod pod roll-2": b}, true, ""},
		{"clusters that disagree", "", deployment("split"), t0, "", nil, map[string]string{"prod": a, "staging": b}, false, ""},
		{"clusters that agree", "", deployment("same"), t0, a, nil, nil, false, ""},
		{"one of them", "staging", deployment("split"), t0, b, nil, nil, false, ""},
		{"compose has no workload", "", yamlfile.Image{Kind: "Compose", Name: "app", Container: "app"}, t0, "", ErrNoRecord, nil, false, ""},
		{"the same image string, written otherwise", "prod", yamlfile.Image{Kind: "Deployment", Namespace: "web", Name: "app", Container: "app", Ref: "app"},
			upgrade.Add(-time.Second), a, nil, nil, false, ""},
		{"a tag changed since: not a pin back", "prod", yamlfile.Image{Kind: "Deployment", Namespace: "web", Name: "app", Container: "app", Ref: "app:v2"},
			upgrade.Add(-time.Second), "", ErrNoRecord, nil, false, "it ran " + a + " as app:latest: the image string changed since"},
		{"a repository changed since", "prod", yamlfile.Image{Kind: "Deployment", Namespace: "web", Name: "app", Container: "app", Ref: "mirror.example/app:latest"},
			upgrade.Add(-time.Second), "", ErrNoRecord, nil, false, "the image string changed since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := RunningAt(h, tc.cluster, tc.at)(tc.img)
			if got != tc.want {
				t.Errorf("digest %q, want %q", got, tc.want)
			}
			var amb *AmbiguousError
			switch {
			case tc.err != nil:
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %v, want %v saying %q", err, tc.err, tc.msg)
				}
			case tc.amb != nil:
				if !errors.As(err, &amb) || !maps.Equal(amb.Digests, tc.amb) || amb.Rollout != tc.rollout {
					t.Errorf("error %#v, want an AmbiguousError of %v (rollout %v)", err, tc.amb, tc.rollout)
				}
			case tc.msg != "":
				if err == nil || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("error %v, want one saying %q", err, tc.msg)
				}
			case err != nil:
				t.Errorf("error %v", err)
			}
		})
	}
}
