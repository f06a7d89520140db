package cleanup

import (
	"strings"
	"testing"
)

// Rows cite dataaxiom/ghcr-cleanup-action's tests/<case>/ (with the
// inputs .github/workflows/ci.yml gives each) or its src/ at v1.2.1.
func TestGHCRCleanupAction(t *testing.T) {
	const uses = "dataaxiom/ghcr-cleanup-action@v1"
	w := func(kv ...string) map[string]string {
		m := map[string]string{"package": "app"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	shared := []ver{
		{name: "idx", tags: []string{"v1"}, days: 20, children: []string{"amd", "arm"}},
		{name: "amd", days: 20},
		{name: "arm", days: 20},
		{name: "oldidx", days: 30, children: []string{"amd", "arm2"}},
		{name: "arm2", days: 30},
	}
	multiTag := []ver{
		{name: "multi", tags: []string{"tag1", "tag2", "tag3"}, days: 10},
		{name: "u", days: 20},
		{name: "other", tags: []string{"1.33-uclibc"}, days: 30},
	}
	fourTagged := []ver{
		{name: "u", days: 50},
		{name: "t33", tags: []string{"1.33-uclibc"}, days: 40},
		{name: "t34", tags: []string{"1.34-uclibc"}, days: 30},
		{name: "t35", tags: []string{"1.35-uclibc"}, days: 20},
		{name: "t36", tags: []string{"1.36-uclibc"}, days: 10},
	}
	runPlanCases(t, []planCase{{
		// config.ts: delete-untagged defaults to true with no other delete
		// or keep option; manifest-analyzer.ts initFilterSet: index children
		// and what sha256-* tags name are not top-level images, so they go
		// only with their parent.
		name: "default delete-untagged keeps children and signatures of kept images",
		uses: uses, with: w(),
		repo: multiArch, deleted: []string{"old", "oldidx", "oldamd"},
	}, {
		// image-deleter.ts deletePlatformChild: a child another index lists
		// stays.
		name: "shared child stays",
		uses: uses, with: w("delete-untagged", "true"),
		repo: shared, deleted: []string{"oldidx", "arm2"},
	}, {
		// tests/cosign (delete-tags: cosign): the image goes with its
		// sha256-….sig signature; its children go with it.
		name: "tests/cosign: delete-tags takes the signature along",
		uses: uses, with: w("delete-tags", "v1"),
		repo: multiArch, deleted: []string{"idx", "amd", "arm", "att", "sig"},
	}, {
		// tests/attestation-tagged (delete-tags: test): an OCI 1.1 referrer
		// goes with its subject.
		name: "tests/attestation-tagged: referrers go with their subject",
		uses: uses, with: w("delete-tags", "test"),
		repo:    []ver{{name: "img", tags: []string{"test"}, days: 5}, {name: "ref", days: 5, subject: "img"}, {name: "keep", tags: []string{"dummy"}, days: 5}},
		deleted: []string{"img", "ref"},
	}, {
		// tests/7a_single-untagging (delete-tags: tag1,tag2): expected tags
		// keep tag3; the untagged image stays.
		name: "tests/7a: untagging a multi-tagged image",
		uses: uses, with: w("delete-tags", "tag1,tag2"),
		repo: multiTag, untagged: []string{"tag1", "tag2"},
	}, {
		// tests/7b_single-untagging-all (delete-tags: '*tag*'): every tag
		// matches, the image goes.
		name: "tests/7b: untagging every tag deletes the image",
		uses: uses, with: w("delete-tags", "*tag*"),
		repo: multiTag, deleted: []string{"multi"},
	}, {
		// tests/3a_single-keep-n-tagged (keep-n-tagged: 2): the newest two
		// tagged images and the untagged one stay.
		name: "tests/3a: keep-n-tagged",
		uses: uses, with: w("keep-n-tagged", "2"),
		repo: fourTagged, deleted: []string{"t33", "t34"},
	}, {
		name: "keep-n-untagged",
		uses: uses, with: w("keep-n-untagged", "1"),
		repo:    []ver{{name: "u1", days: 10}, {name: "u2", days: 20}, {name: "u3", days: 30}, {name: "t", tags: []string{"v1"}, days: 40}},
		deleted: []string{"u2", "u3"},
	}, {
		// tests/9a_multi-older-than-skip (older-than: 30 years): nothing is
		// old enough.
		name: "tests/9a: older-than skips",
		uses: uses, with: w("older-than", "30 years"),
		repo: multiArch,
	}, {
		name: "older-than 25 days",
		uses: uses, with: w("older-than", "25 days"),
		repo: multiArch, deleted: []string{"old", "oldidx", "oldamd"},
	}, {
		name: "exclude-tags protects from delete-tags",
		uses: uses, with: w("delete-tags", "v*", "exclude-tags", "v1"),
		repo:    []ver{{name: "a", tags: []string{"v1"}, days: 30}, {name: "b", tags: []string{"v2"}, days: 20}},
		deleted: []string{"b"},
	}, {
		// image-filter.ts applyExclusionFilters also matches digests.
		name: "exclude-tags matches a digest",
		uses: uses, with: w("delete-untagged", "true", "exclude-tags", dg("old")),
		repo: multiArch, deleted: []string{"oldidx", "oldamd"},
	}, {
		name: "use-regex",
		uses: uses, with: w("delete-tags", "^pr-[0-9]+$", "use-regex", "true"),
		repo:    []ver{{name: "a", tags: []string{"pr-1"}, days: 30}, {name: "b", tags: []string{"pr-1x"}, days: 20}},
		deleted: []string{"a"},
	}, {
		// tests/6d_orphaned-images (delete-orphaned-images: true): a
		// sha256-… tag whose image is gone is deleted.
		name: "tests/6d: orphaned signature",
		uses: uses, with: w("delete-orphaned-images", "true"),
		repo:    []ver{{name: "orph", tags: []string{sigTag("gone")}, days: 5}, {name: "x", tags: []string{"v1"}, days: 5}, {name: "u", days: 5}},
		deleted: []string{"orph"},
	}, {
		// image-validator.ts findPartialImages: some platforms missing.
		name: "delete-partial-images",
		uses: uses, with: w("delete-partial-images", "true"),
		repo:    []ver{{name: "p", tags: []string{"v3"}, days: 5, children: []string{"p1", "missing"}}, {name: "p1", days: 5}, {name: "g", tags: []string{"v4"}, days: 5, children: []string{"gone1"}}},
		deleted: []string{"p", "p1"},
	}, {
		name: "delete-ghost-images",
		uses: uses, with: w("delete-ghost-images", "true"),
		repo:    []ver{{name: "p", tags: []string{"v3"}, days: 5, children: []string{"p1", "missing"}}, {name: "p1", days: 5}, {name: "g", tags: []string{"v4"}, days: 5, children: []string{"gone1"}}},
		deleted: []string{"g"},
	}, {
		// cleanup-orchestrator.ts: keep-n-tagged gates the untagging of a
		// multi-tagged image it keeps (ci.yml 7d/7e).
		name: "keep-n-tagged gates untagging",
		uses: uses, with: w("delete-tags", "pr-*", "keep-n-tagged", "1"),
		repo:    []ver{{name: "n", tags: []string{"latest", "pr-2"}, days: 1}, {name: "o", tags: []string{"pr-1"}, days: 10}},
		deleted: []string{"o"},
	}, {
		name: "without keep-n-tagged the tag is stripped",
		uses: uses, with: w("delete-tags", "pr-*"),
		repo:    []ver{{name: "n", tags: []string{"latest", "pr-2"}, days: 1}, {name: "o", tags: []string{"pr-1"}, days: 10}},
		deleted: []string{"o"}, untagged: []string{"pr-2"},
	}, {
		name: "dry-run",
		uses: uses, with: w("dry-run", "true"),
		repo: multiArch, nameHas: []string{"dry-run: deletes nothing"},
	}, {
		// config.ts: delete-untagged and keep-n-untagged together throw.
		name: "delete-untagged with keep-n-untagged is rejected",
		uses: uses, with: w("delete-untagged", "true", "keep-n-untagged", "2"),
		repo: multiArch, nameHas: []string{"cannot be set at the same time"},
	}})
}

func TestGHCRCleanupRules(t *testing.T) {
	p := readStep(t, "dataaxiom/ghcr-cleanup-action@v1.0.16", map[string]string{"package": "app", "delete-tags": "v1", "older-than": "10 days"})
	if !strings.Contains(p.Name(), "modelled from v1.2.1") {
		t.Errorf("Name() = %q", p.Name())
	}
	if !p.Applies("acme/app") || p.Applies("acme/web") {
		t.Error("Applies does not follow package")
	}
	r := ghcrRepo(multiArch...)
	plan := p.Run(r, ghcrAt)
	if len(plan.Manifests) != 5 {
		t.Fatalf("plan %+v", plan)
	}
	for _, m := range plan.Manifests {
		want := r.Manifests[dg("idx")].Updated.Add(10 * 24 * 60 * 60 * 1e9)
		if !m.Eligible.Equal(want) {
			t.Errorf("%s eligible %s, want the index's updated_at + 10 days", m.Digest, m.Eligible)
		}
		switch m.Digest {
		case dg("idx"):
			if m.Keep != "add v1 to exclude-tags" {
				t.Errorf("keep for the index = %q", m.Keep)
			}
		default:
			if !strings.Contains(m.Keep, "keep "+dg("idx")) || !strings.Contains(m.Rule.Rule, "deleted by delete-tags") {
				t.Errorf("%s: rule %q keep %q", m.Digest, m.Rule.Rule, m.Keep)
			}
		}
	}
	untag := readStep(t, "dataaxiom/ghcr-cleanup-action@v1", map[string]string{"package": "app", "delete-tags": "tag1"})
	plan = untag.Run(ghcrRepo(ver{name: "m", tags: []string{"tag1", "tag2"}, days: 1}), ghcrAt)
	if len(plan.Tags) != 1 || plan.Tags[0].Keep != "add tag1 to exclude-tags" || plan.Tags[0].Digest != dg("m") {
		t.Errorf("untag plan %+v", plan)
	}
}
