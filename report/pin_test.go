package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/types"
)

func TestChangeLine(t *testing.T) {
	t.Parallel()
	d1, d2 := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64)
	for _, tc := range []struct {
		name     string
		old, new string
		field    string
		want     string
	}{
		{"new pin", "nginx:1", "nginx:1@" + d1, "image", "f:3: nginx:1 → nginx:1@" + d1},
		{"moved pin", "nginx:1@" + d1, "nginx:1@" + d2, "image", "f:3: nginx:1 " + d1 + " → " + d2},
		{"pull policy", "Always", "IfNotPresent", "imagePullPolicy", "f:3: imagePullPolicy Always → IfNotPresent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := changeLine(pinresult.Change{File: "f", Line: 3, Field: tc.field, Old: tc.old, New: tc.new})
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRequestSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rc   []types.RequestCount
		want string
	}{
		{"none", nil, "0 registry requests"},
		{"by kind, over hosts and statuses", []types.RequestCount{
			{Host: "a", Kind: "manifest-head", Status: "200", Count: 3},
			{Host: "b", Kind: "blob-head", Status: "200", Count: 2},
			{Host: "b", Kind: "manifest-head", Status: "404", Count: 1},
		}, "6 registry requests (blob-head 2, manifest-head 4)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := requestSummary(tc.rc); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// pinReport is a run that pinned one reference, moved another and found a
// file it skipped, in a file whose name drives a terminal.
func pinReport(written bool) *pinresult.Report {
	d1, d2 := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64)
	file := "k8s/\x1b[31mapp.yaml"
	old := "a: nginx:1\nb: redis:7@" + d1 + "\n"
	return &pinresult.Report{
		Files: []pinresult.File{{Path: file, Old: []byte(old), New: []byte("a: nginx:1@" + d2 + "\nb: redis:7@" + d2 + "\n")}},
		Changes: []pinresult.Change{
			{File: file, Line: 1, Field: "image", Old: "nginx:1", New: "nginx:1@" + d2},
			{File: file, Line: 2, Field: "image", Old: "redis:7@" + d1, New: "redis:7@" + d2},
			{File: file, Line: 3, Field: "image", Old: "skipme:1", New: "skipme:1@" + d2, Skipped: "reached through a YAML alias"},
		},
		Findings: []pinresult.Finding{
			{Kind: pinresult.KindTemplate, File: "chart/\x9b2Jt.yaml", Message: "skipped: Helm template"},
			{Kind: pinresult.KindUnpinned, File: file, Line: 1, Ref: "nginx:1", Message: "nginx:1 is not pinned to a digest"},
		},
		Requests: []types.RequestCount{{Host: "r", Kind: "manifest-head", Status: "200", Count: 2}},
		Written:  written,
	}
}

// Pin writes the diff (or the changes made) on out, everything else on
// notes, with every path's control characters escaped.
func TestPin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		written    bool
		out, notes []string // lines each must hold, in order
	}{
		{"preview", false,
			[]string{`--- a/k8s/\x1b[31mapp.yaml`, `+++ b/k8s/\x1b[31mapp.yaml`, "-a: nginx:1", "+a: nginx:1@sha256:2222"},
			[]string{`k8s/\x1b[31mapp.yaml:2: redis:7 sha256:1111`, `chart/\x9b2Jt.yaml: template: skipped: Helm template`,
				"would pin 2 references in 1 of 1 files; 2 registry requests (manifest-head 2)"}},
		{"written", true,
			[]string{`k8s/\x1b[31mapp.yaml:1: nginx:1 → nginx:1@sha256:2222`, `k8s/\x1b[31mapp.yaml:2: redis:7 sha256:1111`},
			[]string{`chart/\x9b2Jt.yaml: template`, "pinned 2 references in 1 of 1 files; 2 registry requests (manifest-head 2)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, notes bytes.Buffer
			if err := Pin(&out, &notes, pinReport(tc.written)); err != nil {
				t.Fatal(err)
			}
			for w, want := range map[*bytes.Buffer][]string{&out: tc.out, &notes: tc.notes} {
				s := w.String()
				if c := rawControl(s); c != "" {
					t.Errorf("raw control character %s in:\n%s", c, s)
				}
				rest := s
				for _, line := range want {
					i := strings.Index(rest, line)
					if i < 0 {
						t.Errorf("lacks %q (in order) in:\n%s", line, s)
						break
					}
					rest = rest[i+len(line):]
				}
			}
			if strings.Contains(out.String()+notes.String(), "skipme") {
				t.Errorf("a change not made is shown:\n%s%s", out.String(), notes.String())
			}
		})
	}
}

// PinCheck writes the findings in each format, then on notes the files
// skipped on purpose (when the format does not show them as text) and the
// count.
func TestPinCheck(t *testing.T) {
	t.Parallel()
	r := pinReport(false)
	for _, format := range PinCheckFormats {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var out, notes bytes.Buffer
			if err := PinCheck(&out, &notes, format, r); err != nil {
				t.Fatal(err)
			}
			if c := rawControl(out.String() + notes.String()); c != "" {
				t.Errorf("raw control character %s in:\n%s%s", c, out.String(), notes.String())
			}
			wantNotes := "1 unpinned references in 1 files\n"
			if format != "text" {
				wantNotes = `chart/\x9b2Jt.yaml: template: skipped: Helm template` + "\n" + wantNotes
			}
			if notes.String() != wantNotes {
				t.Errorf("notes %q, want %q", notes.String(), wantNotes)
			}
			switch format {
			case "json":
				var doc struct {
					Files    int
					Findings []pinresult.Finding
				}
				if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Files != 1 || len(doc.Findings) != 2 || doc.Findings[1].Kind != pinresult.KindUnpinned {
					t.Errorf("%v: %+v", err, doc)
				}
			case "sarif":
				var log SARIFLog
				if err := json.Unmarshal(out.Bytes(), &log); err != nil || len(log.Runs[0].Results) != 2 ||
					log.Runs[0].Tool.Driver.Rules[log.Runs[0].Results[1].RuleIndex].ID != string(pinresult.KindUnpinned) {
					t.Errorf("%v: %+v", err, log)
				}
			case "github":
				if want := `::notice file=chart/\x9b2Jt.yaml,title=template::skipped: Helm template`; !strings.Contains(out.String(), want) {
					t.Errorf("lacks %q:\n%s", want, out.String())
				}
			case "text":
				if !strings.Contains(out.String(), `k8s/\x1b[31mapp.yaml:1: unpinned: nginx:1 is not pinned to a digest`) {
					t.Errorf("text:\n%s", out.String())
				}
			}
		})
	}
	if err := PinCheck(&bytes.Buffer{}, &bytes.Buffer{}, "xml", r); err == nil {
		t.Error("PinCheck(xml) did not fail")
	}
}

// The summary's M is the number of distinct files holding an unpinned (or
// invalid) reference: not the files read, nor the findings.
func TestPinCheckCountsFiles(t *testing.T) {
	t.Parallel()
	unpinned := func(file string, line int) pinresult.Finding {
		return pinresult.Finding{Kind: pinresult.KindUnpinned, File: file, Line: line, Ref: "nginx:1", Message: "not pinned"}
	}
	read := []pinresult.File{{Path: "a.yaml"}, {Path: "b.yaml"}, {Path: "c.yaml"}, {Path: "d.yaml"}, {Path: "e.yaml"}}
	for _, tc := range []struct {
		name     string
		files    []pinresult.File
		findings []pinresult.Finding
		want     string
	}{
		{"none", read, nil, "0 unpinned references in 0 files\n"},
		{"two in one file of five read", read, []pinresult.Finding{unpinned("a.yaml", 1), unpinned("a.yaml", 9)}, "2 unpinned references in 1 files\n"},
		{"spanning more files than the changed ones", read[:1], []pinresult.Finding{
			unpinned("a.yaml", 1), unpinned("b.yaml", 2), unpinned("c.yaml", 3),
			{Kind: pinresult.KindInvalid, File: "d.yaml", Line: 4, Ref: "Nginx", Message: "invalid"},
			{Kind: pinresult.KindTemplate, File: "t.yaml", Message: "skipped: Helm template"},
		}, "4 unpinned references in 4 files\n"},
		{"one file written two ways", read, []pinresult.Finding{unpinned("a.yaml", 1), unpinned("./a.yaml", 2), unpinned("x/../a.yaml", 3)}, "3 unpinned references in 1 files\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, notes bytes.Buffer
			if err := PinCheck(&out, &notes, "text", &pinresult.Report{Files: tc.files, Findings: tc.findings}); err != nil {
				t.Fatal(err)
			}
			if notes.String() != tc.want {
				t.Errorf("notes %q, want %q", notes.String(), tc.want)
			}
		})
	}
}
