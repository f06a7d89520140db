package gc

import (
	"encoding/json"
	"testing"

	"github.com/regcheck/regcheck/results/gcresult"
)

// TestNoteJSON: a note is written as its text alone, as notes were before
// they had a kind, and reads back as that text.
func TestNoteJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		note       gcresult.Note
	}{
		{"no kind", `"` + noteNoDelete + `"`, gcresult.Note{Text: noteNoDelete}},
		{"a kind", `"` + noteBlobs + `"`, gcresult.Note{Kind: gcresult.NoteBlobs, Text: noteBlobs}},
		{"quotes", `"a \"b\""`, gcresult.Note{Kind: gcresult.NoteUndecided, Text: `a "b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(gcresult.Report{Notes: []gcresult.Note{tc.note}})
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil || string(m["notes"]) != "["+tc.want+"]" {
				t.Fatalf("notes %s (%v), want [%s]", m["notes"], err, tc.want)
			}
			var back gcresult.Report
			if err := json.Unmarshal(b, &back); err != nil || len(back.Notes) != 1 || back.Notes[0] != (gcresult.Note{Text: tc.note.Text}) {
				t.Errorf("read back %+v (%v), want the text %q", back.Notes, err, tc.note.Text)
			}
		})
	}
}
