package cleanup

import (
	"strings"
	"testing"
	"time"
)

// Rows cite snok/container-retention-policy's source at the tag named
// (main.py for v1/v2; src/core/*.rs for v3) or issue 26.
func TestSnokV3(t *testing.T) {
	v3 := func(kv ...string) map[string]string {
		m := map[string]string{"account": "acme", "token": "${{ secrets.PAT }}", "image-names": "app", "cut-off": "1w"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	runPlanCases(t, []planCase{{
		// Issue 26 (snok#43, #95, #97): before v3.1.0 the children of a kept
		// tagged index are untagged versions like any other.
		name: "v3.0.1 deletes the children of a kept tagged index",
		uses: "snok/container-retention-policy@v3.0.1", with: v3("tag-selection", "untagged"),
		repo: multiArch, deleted: []string{"amd", "arm", "att", "old", "oldidx", "oldamd"},
	}, {
		// v3.1.0 src/core/filter_out_multi_arch_children.rs: children of kept
		// tagged versions leave both candidate lists; an untagged index's
		// children are not protected.
		name: "v3.1.0 protects the children of kept tagged images",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("tag-selection", "untagged"),
		repo: multiArch, deleted: []string{"old", "oldidx", "oldamd"},
	}, {
		// kept_tagged_digests: a tagged version the run deletes protects
		// nothing.
		name: "v3.1.0 deletes the children of a deleted tagged index",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("image-tags", "v*"),
		repo: multiArch, deleted: []string{"idx", "amd", "arm", "att", "old", "oldidx", "oldamd"},
	}, {
		// handle_keep_n_most_recent keeps the newest tagged candidates: a
		// cosign signature tag is one, and newer than its image.
		name: "keep-n-most-recent counts signature tags",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("keep-n-most-recent", "1"),
		repo: multiArch, deleted: []string{"idx", "amd", "arm", "att", "old", "oldidx", "oldamd"},
	}, {
		name: "keep-n-most-recent 2 keeps the image and its signature",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("keep-n-most-recent", "2"),
		repo: multiArch, deleted: []string{"old", "oldidx", "oldamd"},
	}, {
		// select_package_versions.rs filter_by_matchers: a negative match on
		// any tag keeps the version; with only negatives every other tag
		// matches.
		name: "image-tags negation",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("image-tags", "!v1"),
		repo: multiArch, deleted: []string{"sig", "old", "oldidx", "oldamd"},
	}, {
		// filter_by_matchers: a partial match (some tags, not all) keeps it.
		name: "image-tags partial match keeps",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("image-tags", "v*", "tag-selection", "tagged"),
		repo:    []ver{{name: "x", tags: []string{"v1", "latest"}, days: 30}, {name: "y", tags: []string{"v0"}, days: 30}},
		deleted: []string{"y"},
	}, {
		// contains_shas_to_skip; the action's input is skip-shas.
		name: "skip-shas",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("tag-selection", "untagged", "skip-shas", dg("old")),
		repo: multiArch, deleted: []string{"oldidx", "oldamd"},
	}, {
		name: "cut-off keeps what is newer",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("cut-off", "25d", "tag-selection", "untagged"),
		repo: multiArch, deleted: []string{"old", "oldidx", "oldamd"},
	}, {
		name: "cut-off 35 days",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("cut-off", "5w", "tag-selection", "untagged"),
		repo: multiArch, deleted: []string{"old"},
	}, {
		// select_package_versions.rs: an OCI 1.1 referrer (a signature or
		// attestation pushed with a subject) is an untagged version; v3.1.0
		// protects index children only, not referrers.
		name: "v3.1.0 deletes the referrers of a kept image",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("tag-selection", "untagged"),
		repo:    []ver{{name: "img", tags: []string{"v1"}, days: 30}, {name: "ref", days: 30, subject: "img"}},
		deleted: []string{"ref"},
	}, {
		// get_relevant_timestamp: timestamp-to-use created_at; updated_at
		// (the default) falls back to created_at.
		name: "timestamp-to-use created_at",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("tag-selection", "untagged", "timestamp-to-use", "created_at", "cut-off", "35d"),
		repo: multiArch, deleted: []string{"old"},
	}, {
		// action.yaml v3.1.0 declares skip-shas; shas-to-skip is the CLI
		// flag's name, not an input: the action never sees it.
		name: "shas-to-skip is not an input",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("tag-selection", "untagged", "shas-to-skip", dg("old")),
		repo: multiArch, deleted: []string{"old", "oldidx", "oldamd"}, nameHas: []string{"shas-to-skip is not an input of v3.1.0: ignored"},
	}, {
		name: "dry-run deletes nothing",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("dry-run", "true"),
		repo: multiArch, nameHas: []string{"dry-run"},
	}, {
		name: "tag-selection outside the three is rejected",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("tag-selection", "sideways"),
		repo: multiArch, nameHas: []string{"rejects its inputs"},
	}, {
		// main.rs: keep-n-most-recent is a u32, and clap refuses -3 (before:
		// a slice bounds panic in runV3).
		name: "negative keep-n-most-recent is rejected",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("keep-n-most-recent", "-3"),
		repo: multiArch, nameHas: []string{"rejects its inputs", "keep-n-most-recent -3 is not a count"},
	}, {
		// There is no floating v3 tag upstream: a SHA or v3 is unknown.
		name: "unknown ref is modelled as v3.1.0",
		uses: "snok/container-retention-policy@3d27e6a0361deed0b7dc5099a82eadd07924b177", with: v3("tag-selection", "untagged"),
		repo: multiArch, deleted: []string{"old", "oldidx", "oldamd"}, nameHas: []string{"version unknown: modelled as v3.1.0"},
	}, {
		name: "expression cut-off is modelled as 0",
		uses: "snok/container-retention-policy@v3.1.0", with: v3("cut-off", "${{ inputs.cutoff }}", "tag-selection", "untagged"),
		repo: []ver{{name: "x", days: 0.5}}, deleted: []string{"x"}, nameHas: []string{"cut-off is unset or an expression"},
	}})
}

func TestSnokV2(t *testing.T) {
	v2 := func(kv ...string) map[string]string {
		m := map[string]string{"account-type": "org", "org-name": "acme", "image-names": "app", "cut-off": "2 days ago UTC", "timestamp-to-use": "updated_at", "token": "x"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// A new pr tag (inside the cut-off), an old release, an old pr tag.
	filterRepo := []ver{
		{name: "A", tags: []string{"pr-9"}, days: 1},
		{name: "B", tags: []string{"v1"}, days: 10},
		{name: "C", tags: []string{"pr-1"}, days: 11},
	}
	keep := []string{"filter-tags", "pr-*", "keep-at-least", "1"}
	runPlanCases(t, []planCase{{
		// Issue 26: untagged-only deletes every untagged version past the
		// cut-off; children of a tagged index are among them.
		name: "v2 untagged-only deletes the children of a tagged index",
		uses: "snok/container-retention-policy@v2", with: v2("untagged-only", "true"),
		repo: multiArch, deleted: []string{"amd", "arm", "att", "old", "oldidx", "oldamd"},
	}, {
		// main.py v1.5.1: keep-at-least slices the newest N versions off
		// before any filter.
		name: "v1 keep-at-least skips the newest versions",
		uses: "snok/container-retention-policy@v1", with: v2(keep...),
		repo: filterRepo, deleted: []string{"C"},
	}, {
		// main.py v2.0.0 to v2.1.2: keep-at-least cancels the first N
		// deletion tasks (the newest candidates).
		name: "v2.0.1 keep-at-least spares the newest candidates",
		uses: "snok/container-retention-policy@v2.0.1", with: v2(keep...),
		repo: filterRepo,
	}, {
		// main.py v2.1.3 and v2.2.1: `idx + 1 - (len(tasks) + simulated_tasks)
		// > keep_at_least` decides, overriding filter-tags.
		name: "v2.2.1 keep-at-least overrides filter-tags",
		uses: "snok/container-retention-policy@v2.2.1", with: v2(keep...),
		repo: filterRepo, deleted: []string{"B", "C"},
	}, {
		name: "skip-tags protects",
		uses: "snok/container-retention-policy@v2", with: v2("skip-tags", "v*, pr-1"),
		repo: filterRepo,
	}, {
		name: "filter-include-untagged false keeps untagged",
		uses: "snok/container-retention-policy@v2", with: v2("filter-include-untagged", "false"),
		repo: multiArch, deleted: []string{"idx", "sig"},
	}, {
		// main.py parse_human_readable_datetime: a cut-off without a time
		// zone is rejected.
		name: "cut-off without a time zone",
		uses: "snok/container-retention-policy@v2", with: v2("cut-off", "2 days ago"),
		repo: multiArch, nameHas: []string{"no time zone"},
	}, {
		name: "fixed cut-off",
		uses: "snok/container-retention-policy@v2", with: v2("cut-off", "2026-05-20T00:00:00Z", "untagged-only", "true"),
		repo: multiArch, deleted: []string{"amd", "arm", "att", "old", "oldidx", "oldamd"},
	}, {
		name: "v2 dry-run",
		uses: "snok/container-retention-policy@v2.2.1", with: v2("dry-run", "true"),
		repo: multiArch, nameHas: []string{"dry-run: deletes nothing"},
	}, {
		// action.yml v1.5.1 has no dry-run input.
		name: "v1 has no dry-run",
		uses: "snok/container-retention-policy@v1.5.1", with: v2("dry-run", "true", "untagged-only", "true"),
		repo: multiArch, deleted: []string{"amd", "arm", "att", "old", "oldidx", "oldamd"}, nameHas: []string{"no dry-run input"},
	}, {
		name: "unknown ref with v2 inputs is modelled as v2.2.1",
		uses: "snok/container-retention-policy@main", with: v2(keep...),
		repo: filterRepo, deleted: []string{"B", "C"}, nameHas: []string{"version unknown: modelled as v2.2.1"},
	}})
}

// The rule's time, the eligibility, and the way to keep each deletion.
func TestSnokRules(t *testing.T) {
	repo := []ver{{name: "idx", tags: []string{"v1"}, days: 3, children: []string{"amd"}}, {name: "amd", days: 3}}
	with := map[string]string{"account": "user", "image-names": "app", "cut-off": "1w", "tag-selection": "untagged"}
	p := readStep(t, "snok/container-retention-policy@v3.0.1", with)
	r := ghcrRepo(repo...)
	if plan := p.Run(r, ghcrAt); !plan.Empty() {
		t.Fatalf("3-day-old child deleted under a 1w cut-off: %+v", plan)
	}
	plan := p.Run(r, ghcrAt.Add(5*24*time.Hour))
	if len(plan.Manifests) != 1 {
		t.Fatalf("after 5 more days: %+v, want the child", plan)
	}
	m := plan.Manifests[0]
	if want := r.Manifests[dg("amd")].Updated.Add(7 * 24 * time.Hour); !m.Eligible.Equal(want) {
		t.Errorf("eligible %s, want updated_at + 1w = %s", m.Eligible, want)
	}
	if !strings.Contains(m.Keep, "upgrade snok/container-retention-policy to v3.1.0") || !strings.Contains(m.Keep, "skip-shas") {
		t.Errorf("keep = %q", m.Keep)
	}
	if !strings.Contains(m.Rule.Rule, "cut-off 1w") {
		t.Errorf("rule = %q", m.Rule.Rule)
	}
	v2 := readStep(t, "snok/container-retention-policy@v2", map[string]string{"account-type": "personal", "image-names": "app", "cut-off": "a week ago UTC"})
	plan = v2.Run(r, ghcrAt.Add(5*24*time.Hour))
	if len(plan.Manifests) != 2 {
		t.Fatalf("v2 plan %+v, want the index and its child", plan)
	}
	for _, m := range plan.Manifests {
		if want := r.Manifests[m.Digest].Updated.AddDate(0, 0, 7); !m.Eligible.Equal(want) {
			t.Errorf("%s eligible %s, want %s", m.Digest, m.Eligible, want)
		}
		if m.Digest == dg("idx") && m.Keep != "add v1 to skip-tags" {
			t.Errorf("keep for the tagged index = %q", m.Keep)
		}
	}
}
