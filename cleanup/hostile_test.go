package cleanup

import (
	"slices"
	"strings"
	"testing"
)

// ecrRuleText is an ECR lifecycle policy of one rule with the selection
// given (JSON members without braces).
func ecrRuleText(selection string) string {
	return `{"rules":[{"rulePriority":1,"selection":{` + selection + `},"action":{"type":"expire"}}]}`
}

// TestReadOutOfRange: values past what the modelled service takes, or
// past what a time.Duration holds, are refused naming the value (before:
// 106752 days overflowed to a cut-off in the future and every image
// expired; 2,000 wildcards were matched).
func TestReadOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"ECR countNumber past a Duration", ecrRuleText(`"tagStatus":"any","countType":"sinceImagePushed","countUnit":"days","countNumber":106752`),
			"countNumber 106752 days is out of range"},
		{"ECR five wildcards", ecrRuleText(`"tagStatus":"tagged","tagPatternList":["a*b*c*d*e*"],"countType":"imageCountMoreThan","countNumber":1`),
			`tagPatternList entry "a*b*c*d*e*" has 5 wildcards: ECR allows 4`},
		{"ECR 2,000 wildcards", ecrRuleText(`"tagStatus":"tagged","tagPatternList":["` + strings.Repeat("*", 2000) + `"],"countType":"imageCountMoreThan","countNumber":1`),
			"has 2000 wildcards: ECR allows 4"},
		{"GitLab older_than past a Duration", `{"enabled":true,"older_than":"106752d","name_regex":".*"}`,
			`"106752d" is out of range`},
		{"GitLab older_than past an int64", `{"enabled":true,"older_than":"99999999999999999999d","name_regex":".*"}`,
			`"99999999999999999999d" is out of range`},
		{"Harbor days past a Duration", harborRules(hrule("nDaysSinceLastPush", 106752, tagSel("matches", "**", "true"))),
			"nDaysSinceLastPush = 106752 days is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read("policy.json", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v; want an error containing %q", err, tc.want)
			}
		})
	}
	// The bounds themselves are accepted.
	for _, doc := range []string{
		ecrRuleText(`"tagStatus":"any","countType":"sinceImagePushed","countUnit":"days","countNumber":106751`),
		ecrRuleText(`"tagStatus":"tagged","tagPatternList":["a*b*c*d*"],"countType":"imageCountMoreThan","countNumber":1`),
		`{"enabled":true,"older_than":"106751d","name_regex":".*"}`,
	} {
		if _, err := Read("policy.json", []byte(doc)); err != nil {
			t.Errorf("Read(%s): %v", doc, err)
		}
	}
}

// TestReadStateGarbage: an export that is not one of a repository's
// images, or lists one twice, or gives a time no clock reads, is an input
// error naming the entry (before: an npm package's version "1.2.3" was
// read as a manifest and reported deleted; Infinity and 1e300 were read
// as times; a digest listed twice was merged silently).
func TestReadStateGarbage(t *testing.T) {
	d1 := "sha256:" + strings.Repeat("1", 64)
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"GHCR npm versions", `[{"id":1,"name":"1.2.3","created_at":"2026-11-01T00:00:00Z","metadata":{"package_type":"container","container":{"tags":[]}}}]`,
			`name "1.2.3" is not a digest`},
		{"GitLab tag digest", `[{"name":"v1","path":"g/p:v1","location":"r/g/p:v1","digest":"not-a-digest","created_at":"2026-11-01T00:00:00Z"}]`,
			`digest "not-a-digest" is not a digest`},
		{"Harbor artifact digest", `[{"id":1,"digest":"not-a-digest","push_time":"2026-11-01T00:00:00Z","tags":[]}]`,
			`digest "not-a-digest" is not a digest`},
		{"ECR imageDigest", `{"imageDetails":[{"repositoryName":"a","imageDigest":"1.2.3"}]}`,
			`imageDigest "1.2.3" is not a digest`},
		{"ECR digest twice", `{"imageDetails":[{"repositoryName":"a","imageDigest":"` + d1 + `"},{"repositoryName":"a","imageDigest":"` + d1 + `"}]}`,
			"imageDetails[1] lists " + d1 + ", as imageDetails[0] does"},
		{"ECR Infinity", `{"imageDetails":[{"repositoryName":"a","imageDigest":"` + d1 + `","imagePushedAt":"Infinity"}]}`,
			"time Infinity is out of range"},
		{"ECR 1e300", `{"imageDetails":[{"repositoryName":"a","imageDigest":"` + d1 + `","imagePushedAt":1e300}]}`,
			"time 1e+300 is out of range"},
		{"ECR NaN", `{"imageDetails":[{"repositoryName":"a","imageDigest":"` + d1 + `","imagePushedAt":"NaN"}]}`,
			"time NaN is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadState("export.json", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadState: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestReadStateTruncated: an ECR export that ends with a nextToken is read,
// with a note saying it is one page of several.
func TestReadStateTruncated(t *testing.T) {
	d1 := "sha256:" + strings.Repeat("1", 64)
	s, err := ReadState("page.json", []byte(`{"imageDetails":[{"repositoryName":"a","imageDigest":"`+d1+`"}],"nextToken":"eyJ0"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "nextToken: it is one page of several") {
		t.Fatalf("notes %q; want the nextToken noted", s.Notes)
	}
}

// TestWorkflowAliases: YAML anchors and aliases in a workflow are
// followed, as GitHub Actions follows them: `with: *x`, `uses: *x` and a
// whole step `- *x` read as the step they name (before: `with: *x` lost the
// inputs, `uses: *x` dropped the step, and the run said clean).
func TestWorkflowAliases(t *testing.T) {
	const head = "on: {schedule: [{cron: '0 3 * * *'}]}\njobs:\n"
	const uses = "snok/container-retention-policy@v3.1.0"
	const with = "{account: acme, token: x, image-names: app, cut-off: 1w, tag-selection: untagged}"
	plain := head + "  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: " + uses + "\n        with: " + with + "\n"
	want := readPolicies(t, plain)[0]
	wantDeleted := deletedBy(want)
	for _, tc := range []struct {
		name, doc string
		n         int
	}{
		{"with: *x", head + "  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: " + uses + "\n        with: &in " + with + "\n" +
			"  b:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: " + uses + "\n        with: *in\n", 2},
		{"uses: *x", head + "  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: &u " + uses + "\n        with: " + with + "\n" +
			"      - uses: *u\n        with: " + with + "\n", 2},
		{"a step - *x", head + "  a:\n    runs-on: ubuntu-latest\n    steps:\n      - &step\n        uses: " + uses + "\n        with: " + with + "\n" +
			"  b:\n    runs-on: ubuntu-latest\n    steps:\n      - *step\n", 2},
		{"steps: *x", head + "  a:\n    runs-on: ubuntu-latest\n    steps: &steps\n      - uses: " + uses + "\n        with: " + with + "\n" +
			"  b:\n    runs-on: ubuntu-latest\n    steps: *steps\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := readPolicies(t, tc.doc)
			if len(ps) != tc.n {
				t.Fatalf("%d policies, want %d", len(ps), tc.n)
			}
			for i, p := range ps {
				if p.Name() != want.Name() || !slices.Equal(deletedBy(p), wantDeleted) {
					t.Errorf("step %d: %q deleting %v; want %q deleting %v", i, p.Name(), deletedBy(p), want.Name(), wantDeleted)
				}
			}
		})
	}
}

func readPolicies(t *testing.T, doc string) []Policy {
	t.Helper()
	ps, err := Read("clean.yml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// deletedBy is what p deletes of multiArch at ghcrAt, by name.
func deletedBy(p Policy) []string {
	r := ghcrRepo(multiArch...)
	return names(r, p.Run(r, ghcrAt).Manifests, multiArch)
}
