package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/regcheck/regcheck/internal/printable"
	"github.com/regcheck/regcheck/results/recordresult"
	"github.com/regcheck/regcheck/types"
)

// RecordFormats are the formats RecordSnapshot and RecordDiff write.
var RecordFormats = []string{"table", "json"}

// RecordSnapshot writes the snapshot a record run saved (res.Snapshot) in
// format (see RecordFormats): a table of the containers, one a row, then
// how many were recorded in store (where the history is kept: a path,
// "configmap NS/NAME"). Every string from the cluster goes through
// Printable.
func RecordSnapshot(w io.Writer, format string, res recordresult.Result, store string) error {
	switch format {
	case "json":
		return recordJSON(w, res, nil)
	case "table":
	default:
		return unknownRecordFormat(format)
	}
	snap := res.Snapshot
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAMESPACE\tOWNER\tPOD\tCONTAINER\tDIGEST\tNODE\n")
	for _, e := range snap.Entries {
		d := types.ShortDigest(e.Digest)
		if d == "" {
			d = "(no repo digest)"
		}
		row(tw, e.Namespace, e.OwnerKind+"/"+e.OwnerName, e.Pod, containerCell(e.Container, e.Volume), d, e.Node)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nrecorded %d containers of %s in %s\n", len(snap.Entries), printable.Text(snap.Cluster), printable.Text(store))
	return err
}

// RecordDiff writes the containers a record run found running a digest
// they did not run at the previous snapshot (res.Changes) in format (see
// RecordFormats): a table, one a row, then how many changed since when;
// or, when nothing was recorded before, a line that says so.
func RecordDiff(w io.Writer, format string, res recordresult.Result) error {
	switch format {
	case "json":
		changes := res.Changes
		if changes == nil {
			changes = []recordresult.Change{}
		}
		return recordJSON(w, res, changes)
	case "table":
	default:
		return unknownRecordFormat(format)
	}
	if res.Previous.Time.IsZero() {
		_, err := fmt.Fprintf(w, "no previous snapshot of %s: nothing to compare\n", printable.Text(res.Snapshot.Cluster))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAMESPACE\tOWNER\tCONTAINER\tPOD\tWAS\tNOW\n")
	for _, c := range res.Changes {
		was := make([]string, len(c.From))
		for i, d := range c.From {
			was[i] = types.ShortDigest(d)
		}
		row(tw, c.Namespace, c.OwnerKind+"/"+c.OwnerName, containerCell(c.Container, c.Volume), c.Pod, strings.Join(was, ","), types.ShortDigest(c.To))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d containers changed digest since %s\n", len(res.Changes), res.Previous.Time.Format(time.RFC3339))
	return err
}

// recordJSON writes the snapshot's entries and, for a diff, the changes
// (null otherwise), and how many records the store trimmed.
func recordJSON(w io.Writer, res recordresult.Result, changes []recordresult.Change) error {
	return WriteJSON(w, struct {
		Cluster    string                `json:"cluster"`
		Time       time.Time             `json:"time"`
		Containers int                   `json:"containers"`
		Entries    []recordresult.Entry  `json:"entries"`
		Changes    []recordresult.Change `json:"changes"`
		Trimmed    int                   `json:"trimmed"`
	}{res.Snapshot.Cluster, res.Snapshot.Time, len(res.Snapshot.Entries), res.Snapshot.Entries, changes, res.Trimmed})
}

// containerCell is the CONTAINER cell of a record table: the container's
// name, or "volume NAME" for an image volume.
func containerCell(container, volume string) string {
	if volume != "" {
		return "volume " + volume
	}
	return container
}

// row writes one table row, each cell through Printable (which also keeps
// a tab in a name from adding a column).
func row(tw io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = printable.Text(c)
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
}

func unknownRecordFormat(format string) error {
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(RecordFormats, " or "))
}
