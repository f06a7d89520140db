package record

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/regcheck/regcheck/results/recordresult"
)

// Store holds a History somewhere.
type Store interface {
	// Load returns the stored history, or an empty one if none is stored yet.
	Load(ctx context.Context) (*History, error)
	// Update loads the history, calls fn on it and stores the result,
	// atomically with respect to other Updates of the same store.
	Update(ctx context.Context, fn func(*History) error) (recordresult.UpdateResult, error)
}

// Save merges snap into the history in st and reports what changed: each
// owner container of snap is compared with its own most recent earlier
// records, whichever run recorded them, so runs of different namespaces
// (record -n a, then -n b) do not hide each other's changes.
func Save(ctx context.Context, st Store, snap recordresult.Snapshot) (recordresult.Result, error) {
	res := recordresult.Result{Snapshot: snap}
	ur, err := st.Update(ctx, func(h *History) error {
		res.Previous = h.Previous(snap)
		h.Merge(snap)
		return nil
	})
	if err != nil {
		return recordresult.Result{}, err
	}
	res.UpdateResult = ur
	if !res.Previous.Time.IsZero() {
		res.Changes = Diff(res.Previous, snap)
	}
	return res, nil
}

// Decode parses a serialized history. Empty input, invalid JSON, a missing
// schemaVersion or a newer one than this package knows are errors: a
// history that cannot be read must not be replaced by a new one.
func Decode(data []byte) (*History, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("empty history")
	}
	var h History
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("invalid history: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid history: trailing data")
	}
	switch {
	case h.SchemaVersion == 0:
		return nil, fmt.Errorf("invalid history: no schemaVersion")
	case h.SchemaVersion > SchemaVersion:
		return nil, fmt.Errorf("history schemaVersion %d is newer than this regcheck supports (%d)", h.SchemaVersion, SchemaVersion)
	}
	h.sort()
	h.sortTransitions()
	return &h, nil
}

// Encode serializes h; indent makes it readable (files: one record or
// transition a line), compact saves space (ConfigMaps).
func Encode(h *History, indent bool) ([]byte, error) {
	if indent {
		var b bytes.Buffer
		err := encodeIndented(&b, h)
		return b.Bytes(), err
	}
	out := *h
	out.SchemaVersion = SchemaVersion
	if out.Records == nil {
		out.Records = []Record{}
	}
	return json.Marshal(&out)
}

// encodeIndented writes h to w as Encode(h, true) encodes it: one record
// or transition a line, each encoded alone, so that no encoding of the
// whole history is held in memory. A line an item reads as well as an
// indented one for grep and diff, and costs a third of the time to write
// (json.Encoder's indentation is a second pass over every byte: 60% of a
// write of the watcher's history at 10,000 pods).
func encodeIndented(w io.Writer, h *History) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	bw := errWriter{w: w}
	bw.printf("{\n  \"schemaVersion\": %d,\n  \"records\": ", SchemaVersion)
	list := func(n int, item func(int) any) {
		if n == 0 {
			bw.printf("[]")
			return
		}
		bw.printf("[\n")
		for i := range n {
			buf.Reset()
			if err := enc.Encode(item(i)); err != nil && bw.err == nil {
				bw.err = err
			}
			bw.printf("    ")
			bw.write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			if i < n-1 {
				bw.printf(",")
			}
			bw.printf("\n")
		}
		bw.printf("  ]")
	}
	list(len(h.Records), func(i int) any { return &h.Records[i] })
	if len(h.Transitions) > 0 {
		bw.printf(",\n  \"transitions\": ")
		list(len(h.Transitions), func(i int) any { return &h.Transitions[i] })
	}
	bw.printf("\n}\n")
	return bw.err
}

// errWriter keeps the first error of a run of writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// trim drops the oldest records (by LastSeen) and transitions (by Time)
// until the encoded history fits in max bytes. It returns the encoding and
// how many records and transitions it dropped.
func trim(h *History, max int) ([]byte, int, error) {
	b, err := Encode(h, false)
	if err != nil || len(b) <= max {
		return b, 0, err
	}
	order := h.byAge()
	// Estimate how many to drop from per-item sizes, then check and adjust.
	drop := 0
	excess := len(b) - max
	for drop < len(order) && excess > 0 {
		n, err := h.size(order[drop])
		if err != nil {
			return nil, 0, err
		}
		excess -= n + 1
		drop++
	}
	for {
		kept := h.without(order[:drop])
		b, err = Encode(kept, false)
		if err != nil {
			return nil, 0, err
		}
		if len(b) <= max || drop == len(order) {
			if len(b) > max {
				return nil, 0, fmt.Errorf("an empty history (%d bytes) does not fit in %d bytes", len(b), max)
			}
			h.Records, h.Transitions = kept.Records, kept.Transitions
			return b, drop, nil
		}
		drop++
	}
}

func trimMessage(where string, max, trimmed, before int, kept []Record) string {
	msg := fmt.Sprintf("history in %s exceeded %d bytes: trimmed the %d oldest of %d records and transitions (by lastSeen and time)", where, max, trimmed, before)
	if len(kept) > 0 {
		oldest := kept[0].LastSeen
		for _, r := range kept {
			if r.LastSeen.Before(oldest) {
				oldest = r.LastSeen
			}
		}
		msg += "; the oldest record kept was last seen " + oldest.Format(time.RFC3339)
	}
	return msg
}
