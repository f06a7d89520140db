package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/results/recordresult"
)

// recordResult is what a record run of two snapshots saved: three
// containers (one with no repo digest), two of them changed since the
// previous snapshot (one pod restarted, one pod new), three records
// trimmed.
func recordResult() recordresult.Result {
	a, b, c := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("c", 64)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := func(ns, kind, owner, pod, container, digest, node string) recordresult.Entry {
		return recordresult.Entry{Cluster: "kind-prod", Time: now, Namespace: ns, OwnerKind: kind, OwnerName: owner, Pod: pod,
			Container: container, Image: "img", Digest: digest, Node: node, PullPolicy: "IfNotPresent", RestartCount: 1}
	}
	return recordresult.Result{
		UpdateResult: recordresult.UpdateResult{Trimmed: 3, Message: "trimmed"},
		Snapshot: recordresult.Snapshot{Cluster: "kind-prod", Time: now, Entries: []recordresult.Entry{
			e("shop", "Deployment", "web", "web-7d9f-aaaaa", "nginx", b, "node-a"),
			e("shop", "Deployment", "turn", "turn-5498-ccccc", "coturn", "", "node-b"),
			e("default", "Pod", "debug", "debug", "main", c, "node-a"),
		}},
		Previous: recordresult.Snapshot{Cluster: "kind-prod", Time: now.Add(-time.Hour)},
		Changes: []recordresult.Change{
			{Cluster: "kind-prod", Namespace: "shop", OwnerKind: "Deployment", OwnerName: "web", Container: "nginx",
				Pod: "web-7d9f-aaaaa", Node: "node-a", Image: "nginx:1.27", From: []string{a}, To: b},
			{Cluster: "kind-prod", Namespace: "default", OwnerKind: "Pod", OwnerName: "debug", Container: "main",
				Pod: "debug", Node: "node-a", Image: "alpine", From: []string{a, b}, To: c},
		},
	}
}

// firstRecord is a record run with nothing recorded before.
func firstRecord() recordresult.Result { return firstRecordOf(recordResult()) }

// The record outputs match their golden files, which were written by the
// command's output before it moved here.
func TestRecordGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		render func(w *bytes.Buffer) error
	}{
		{"record.table", func(w *bytes.Buffer) error {
			return RecordSnapshot(w, "table", recordResult(), "/var/lib/regcheck/history.json")
		}},
		{"record.json", func(w *bytes.Buffer) error { return RecordSnapshot(w, "json", recordResult(), "unused") }},
		{"record-diff.table", func(w *bytes.Buffer) error { return RecordDiff(w, "table", recordResult()) }},
		{"record-diff.json", func(w *bytes.Buffer) error { return RecordDiff(w, "json", recordResult()) }},
		{"record-diff-first.table", func(w *bytes.Buffer) error { return RecordDiff(w, "table", firstRecord()) }},
		{"record-diff-first.json", func(w *bytes.Buffer) error { return RecordDiff(w, "json", firstRecord()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.render(&buf); err != nil {
				t.Fatal(err)
			}
			goldenFile(t, filepath.Join("testdata", tc.name+".golden"), buf.Bytes())
		})
	}
}

// goldenFile compares got with the file at path (rewritten with -update).
func goldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n%s", path, got)
	}
}

// Names from the cluster reach the table and the JSON with their control
// characters escaped, and a tab in a name adds no column.
func TestRecordEscapes(t *testing.T) {
	res := recordResult()
	res.Snapshot.Cluster = "prod\x1b]0;owned\x07"
	res.Snapshot.Entries[0].Pod = "web\tx\x9b31m"
	res.Snapshot.Entries[0].Node = "node\r\nforged line"
	res.Changes[0].OwnerName = "web\x1b[2J"
	for _, tc := range []struct {
		name   string
		render func(w *bytes.Buffer) error
		lines  int    // for a table: header, rows, blank, summary
		cell   string // how an escaped name must read, for a table
	}{
		{"table", func(w *bytes.Buffer) error { return RecordSnapshot(w, "table", res, "/tmp/\x1b[31mhistory.json") }, 6, `web\tx\x9b31m`},
		{"json", func(w *bytes.Buffer) error { return RecordSnapshot(w, "json", res, "") }, 0, ""},
		{"diff table", func(w *bytes.Buffer) error { return RecordDiff(w, "table", res) }, 5, `Deployment/web\x1b[2J`},
		{"diff json", func(w *bytes.Buffer) error { return RecordDiff(w, "json", res) }, 0, ""},
		{"first diff", func(w *bytes.Buffer) error { return RecordDiff(w, "table", firstRecordOf(res)) }, 1, `prod\x1b]0;owned\x07`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.render(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if c := rawControl(out); c != "" {
				t.Errorf("raw control character %s in:\n%s", c, out)
			}
			if strings.Contains(out, "\nforged line") {
				t.Errorf("a name forged a line:\n%s", out)
			}
			if tc.lines > 0 && (strings.Count(out, "\n") != tc.lines || !strings.Contains(out, tc.cell)) {
				t.Errorf("want %d lines and %s in:\n%s", tc.lines, tc.cell, out)
			}
		})
	}
}

func firstRecordOf(res recordresult.Result) recordresult.Result {
	res.Previous, res.Changes = recordresult.Snapshot{Cluster: res.Snapshot.Cluster}, nil
	return res
}

func TestRecordUnknownFormat(t *testing.T) {
	for _, render := range []func() error{
		func() error { return RecordSnapshot(io.Discard, "yaml", recordResult(), "") },
		func() error { return RecordDiff(io.Discard, "yaml", recordResult()) },
	} {
		if err := render(); err == nil || !strings.Contains(err.Error(), `"yaml" (want table or json)`) {
			t.Errorf("error %v, want one naming the formats", err)
		}
	}
}

// An image volume's row says "volume NAME" in the CONTAINER column.
func TestRecordImageVolume(t *testing.T) {
	res := recordResult()
	res.Snapshot.Entries = []recordresult.Entry{{Cluster: "kind-prod", Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve",
		Pod: "serve-1", Volume: "weights", Image: "reg.example/models:v3", Digest: "sha256:" + strings.Repeat("d", 64)}}
	res.Changes = []recordresult.Change{{Cluster: "kind-prod", Namespace: "ml", OwnerKind: "Deployment", OwnerName: "serve", Volume: "weights",
		Pod: "serve-1", From: []string{"sha256:" + strings.Repeat("a", 64)}, To: "sha256:" + strings.Repeat("d", 64)}}
	for _, tc := range []struct {
		name   string
		render func(w io.Writer) error
		want   string
	}{
		{"snapshot table", func(w io.Writer) error { return RecordSnapshot(w, "table", res, "h.json") }, "serve-1  volume weights"},
		{"diff table", func(w io.Writer) error { return RecordDiff(w, "table", res) }, "volume weights"},
		{"diff json", func(w io.Writer) error { return RecordDiff(w, "json", res) }, `"Volume": "weights"`},
		{"snapshot json", func(w io.Writer) error { return RecordSnapshot(w, "json", res, "h.json") }, `"volume": "weights"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.render(&buf); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), tc.want) {
				t.Errorf("output does not say %q:\n%s", tc.want, buf.String())
			}
		})
	}
}
