package cleanup

import (
	"fmt"
	"strings"
	"testing"
)

// Rows cite actions/delete-package-versions' __tests__/delete.test.ts
// ("finalIds test - …") or its src/ (input.ts, delete.ts), or issue 26.
func TestDeletePackageVersions(t *testing.T) {
	base := map[string]string{"package-name": "app", "package-type": "container"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// Five versions, oldest first by created_at.
	five := []ver{
		{name: "a", tags: []string{"v1"}, days: 50},
		{name: "b", days: 40},
		{name: "c", tags: []string{"v2"}, days: 30},
		{name: "d", days: 20},
		{name: "e", days: 10},
	}
	runPlanCases(t, []planCase{{
		// Issue 26, actions/delete-package-versions#90 and #162: platform
		// images and attestations are untagged versions, so they go.
		name: "delete-only-untagged-versions takes a multi-arch image's children",
		uses: "actions/delete-package-versions@v5", with: with("delete-only-untagged-versions", "true"),
		repo: multiArch, deleted: []string{"amd", "arm", "att", "old", "oldidx", "oldamd"},
	}, {
		// delete.test.ts "delete only untagged versions with
		// minVersionsToKeep": the newest N untagged stay.
		name: "min-versions-to-keep keeps the newest untagged",
		uses: "actions/delete-package-versions@v4", with: with("delete-only-untagged-versions", "true", "min-versions-to-keep", "2"),
		repo: five, deleted: []string{"b"},
	}, {
		// src/input.ts at v4.0.0 has no deleteUntaggedVersions: the input
		// is unknown to the action and tagged versions are candidates.
		name: "v4.0.0 ignores delete-only-untagged-versions",
		uses: "actions/delete-package-versions@v4.0.0", with: with("delete-only-untagged-versions", "true", "min-versions-to-keep", "2"),
		repo: five, deleted: []string{"a", "b", "c"}, nameHas: []string{"v4.0.0 has no delete-only-untagged-versions"},
	}, {
		// delete.test.ts "keep minVersionsToKeep": tagged or not, all but the
		// newest N.
		name: "min-versions-to-keep alone deletes tagged versions",
		uses: "actions/delete-package-versions@v5", with: with("min-versions-to-keep", "3"),
		repo: five, deleted: []string{"a", "b"},
	}, {
		// delete.test.ts "do not delete more than numOldVersionsToDelete".
		name: "num-old-versions-to-delete takes the oldest",
		uses: "actions/delete-package-versions@v5", with: with("num-old-versions-to-delete", "2"),
		repo: five, deleted: []string{"a", "b"},
	}, {
		// action.yml: num-old-versions-to-delete defaults to 1.
		name: "no count deletes the oldest version",
		uses: "actions/delete-package-versions@v5", with: with(),
		repo: five, deleted: []string{"a"},
	}, {
		// Issue 26: ignore-versions is a regex over the version name, which
		// for a container is the digest: a tag pattern protects nothing.
		name: "ignore-versions over a tag protects nothing",
		uses: "actions/delete-package-versions@v5", with: with("min-versions-to-keep", "0", "ignore-versions", "^v1$"),
		repo: five, deleted: []string{"a", "b", "c", "d", "e"},
	}, {
		name: "ignore-versions over a digest protects it",
		uses: "actions/delete-package-versions@v5", with: with("min-versions-to-keep", "0", "ignore-versions", "^"+dg("a")+"$"),
		repo: five, deleted: []string{"b", "c", "d", "e"},
	}, {
		// src/input.ts checkInput: num-old-versions-to-delete above 1 with
		// min-versions-to-keep is an invalid combination; nothing goes.
		name: "invalid combination deletes nothing",
		uses: "actions/delete-package-versions@v5", with: with("num-old-versions-to-delete", "3", "min-versions-to-keep", "1"),
		repo: five, nameHas: []string{"rejects its inputs"},
	}, {
		// src/input.ts: delete-only-pre-release-versions puts a release-number
		// pattern in ignore-versions; a digest never matches it.
		name: "delete-only-pre-release-versions takes every container version",
		uses: "actions/delete-package-versions@v5", with: with("delete-only-pre-release-versions", "true", "min-versions-to-keep", "1"),
		repo: five, deleted: []string{"a", "b", "c", "d"},
	}, {
		// A version the export lacks (no created_at) was pushed after the
		// export: it counts as the newest, not the oldest.
		name: "a version without times counts as newest",
		uses: "actions/delete-package-versions@v5", with: with("min-versions-to-keep", "1"),
		repo: append([]ver{{name: "z", noTimes: true}}, five[1:]...), deleted: []string{"b", "c", "d", "e"},
	}, {
		// delete.test.ts "supplied package version id".
		name: "package-version-ids",
		uses: "actions/delete-package-versions@v5", with: with("package-version-ids", "2,4"),
		repo: five, deleted: []string{"b", "d"},
	}, {
		name: "unknown ref",
		uses: "actions/delete-package-versions@e5bc658a8bf9a7d5e7fab8d4b1c1d0c2a5c4d5e6", with: with("delete-only-untagged-versions", "true"),
		repo: five, deleted: []string{"b", "d", "e"}, nameHas: []string{"version unknown: modelled as v5"},
	}, {
		name: "expressions in inputs",
		uses: "actions/delete-package-versions@v5", with: with("min-versions-to-keep", "${{ vars.KEEP }}", "delete-only-untagged-versions", "true"),
		repo: five, deleted: []string{"b", "d", "e"}, nameHas: []string{"min-versions-to-keep is an expression"},
	}})
}

// delete.test.ts "sorting accross pages" and src/delete.ts: versions are
// sorted by created_at, then id; at most RATE_LIMIT (100) go in a run.
func TestDeletePackageVersionsOrderAndRateLimit(t *testing.T) {
	var vs []ver
	for i := range 150 {
		vs = append(vs, ver{name: fmt.Sprint("u", i), days: float64(200 - i)})
	}
	// Two versions created at the same instant: the lower id goes first.
	vs = append(vs, ver{name: "tie1", tags: []string{"t1"}, days: 500}, ver{name: "tie2", tags: []string{"t2"}, days: 500})
	p := readStep(t, "actions/delete-package-versions@v5", map[string]string{"package-name": "app", "package-type": "container", "delete-only-untagged-versions": "true"})
	r := ghcrRepo(vs...)
	steps, after, err := Runs(p, r, ghcrAt, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || len(steps[0].Plan.Manifests) != 100 || len(steps[1].Plan.Manifests) != 50 {
		t.Fatalf("runs deleted %d in %d runs, want 100 then 50", len(steps[0].Plan.Manifests), len(steps))
	}
	if _, ok := after.Manifests[dg("u149")]; ok {
		t.Error("the newest untagged version survived two runs")
	}
	first := names(r, steps[0].Plan.Manifests, vs)
	for _, n := range first {
		if i := strings.TrimPrefix(n, "u"); len(i) == 3 && i >= "100" {
			t.Errorf("run 1 deleted %s, one of the 50 newest", n)
		}
	}
	one := readStep(t, "actions/delete-package-versions@v5", map[string]string{"package-name": "app", "package-type": "container"})
	if got := names(r, one.Run(r, ghcrAt).Manifests, vs); len(got) != 1 || got[0] != "tie1" {
		t.Errorf("oldest of two created together = %v, want tie1 (the lower id)", got)
	}
	npm := readStep(t, "actions/delete-package-versions@v5", map[string]string{"package-name": "app", "package-type": "npm"})
	if npm.Applies("acme/app") || !strings.Contains(npm.Name(), "not a container package") {
		t.Errorf("an npm package step applies to a container repository: %s", npm.Name())
	}
	plan := p.Run(ghcrRepo(multiArch...), ghcrAt)
	for _, m := range plan.Manifests {
		if m.Digest == dg("amd") && !strings.Contains(m.Keep, "child of the tagged index") {
			t.Errorf("keep for a child of a tagged index = %q", m.Keep)
		}
		if !m.Eligible.IsZero() {
			t.Errorf("eligible %s for a count rule", m.Eligible)
		}
	}
}
