package pin

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/yamlfile"
)

func TestRunningFrom(t *testing.T) {
	t.Parallel()
	a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	t1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	entry := func(ns, name, pod, digest string) record.Entry {
		return record.Entry{Namespace: ns, OwnerKind: "Deployment", OwnerName: name, Pod: pod, Container: "app", Digest: digest}
	}
	snap := func(cluster string, at time.Time, es ...record.Entry) record.Snapshot {
		return record.Snapshot{Cluster: cluster, Time: at, Entries: es}
	}
	h := record.NewHistory()
	for _, s := range []record.Snapshot{
		snap("prod", t1, entry("default", "api", "api-1", a), entry("shop", "web", "web-1", a),
			entry("default", "moved", "moved-1", a), entry("default", "nodigest", "nodigest-1", "")),
		snap("prod", t2, entry("default", "moved", "moved-2", b),
			entry("default", "roll", "roll-old", a), entry("default", "roll", "roll-new", b)),
		snap("staging", t2, entry("default", "api", "api-1", b), entry("shop", "web", "web-1", a)),
		// Deployment ml/serve: container app runs a, its image volume app
		// (the same name) mounts b.
		snap("prod", t2, entry("ml", "serve", "serve-1", a),
			record.Entry{Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Pod: "serve-1", Volume: "app", Digest: b}),
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
