package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/scan"
	"github.com/spf13/cobra"
)

type recordFlags struct {
	kube      kubeFlags
	out       string
	configMap string
	diff      bool
	output    string
	metrics   metricsFlags
}

func newRecordCmd(s Streams, g *globals) *cobra.Command {
	f := &recordFlags{}
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record which digest every container runs, before anything restarts it",
		Long: `Record takes a snapshot of what runs — cluster, namespace, owner, pod, container,
spec image, running digest (from the container status imageID), node, pull
policy, start time and restart count — and merges it into a history with
first-seen and last-seen times per (owner, container, digest). History is
never dropped: the file is replaced atomically under a lock, and a file that
cannot be read is an error, never overwritten.

With --configmap NS/NAME the history lives in the cluster, for a CronJob; the
oldest records are trimmed (and said so) to stay under the 1 MiB object limit.

With --diff it prints the containers now running a different digest than at
the previous snapshot. regcheck pin --from-records pins to what was recorded.`,
		Example: `  regcheck record -A
  regcheck record -A --diff
  regcheck record -A --configmap regcheck/history     # in-cluster, as a CronJob`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRecord(cmd, s, g, f) },
	}
	fl := cmd.Flags()
	f.kube.addTo(fl)
	fl.StringVar(&f.out, "out", "", "history file (default $XDG_STATE_HOME/regcheck/history.json)")
	fl.StringVar(&f.configMap, "configmap", "", "keep the history in this ConfigMap (NAMESPACE/NAME) instead of a file")
	fl.BoolVar(&f.diff, "diff", false, "print the containers running a different digest than at the previous snapshot")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	f.metrics.addTo(fl)
	return cmd
}

func runRecord(cmd *cobra.Command, s Streams, g *globals, f *recordFlags) error {
	if f.output != "table" && f.output != "json" {
		return usageError(fmt.Errorf("unknown output format %q (want table or json)", f.output))
	}
	if f.out != "" && f.configMap != "" {
		return usageError(fmt.Errorf("--out and --configmap cannot be used together"))
	}
	pub, err := f.metrics.publisher("record")
	if err != nil {
		return usageError(err)
	}
	start := time.Now()
	kt, err := f.kube.connect()
	if err != nil {
		return err
	}
	var st record.Store
	where := "configmap " + f.configMap
	if f.configMap != "" {
		ns, name, err := record.ParseConfigMapRef(f.configMap)
		if err != nil {
			return usageError(err)
		}
		st = &record.ConfigMap{Client: kt.client, Namespace: ns, Name: name, Logger: g.logger}
	} else {
		path := f.out
		if path == "" {
			if path, err = record.DefaultPath(); err != nil {
				return err
			}
		}
		st = &record.File{Path: path}
		where = path
	}
	ctx := cmd.Context()
	inv, err := kt.inventory(ctx, g.logger)
	if err != nil {
		return err
	}
	snap := record.FromInventory(kt.name, time.Now(), inv)
	res, err := record.Save(ctx, st, snap)
	if err != nil {
		return fmt.Errorf("saving the record: %w", err)
	}
	g.logger.Info("recorded", "cluster", kt.name, "containers", len(snap.Entries), "store", where)
	if err := pub.publish(ctx, report.RecordMetrics(snap, res, start, time.Now()), nil); err != nil {
		return err
	}
	if f.output == "json" {
		out := struct {
			Cluster    string          `json:"cluster"`
			Time       time.Time       `json:"time"`
			Containers int             `json:"containers"`
			Entries    []record.Entry  `json:"entries"`
			Changes    []record.Change `json:"changes"`
			Trimmed    int             `json:"trimmed"`
		}{kt.name, snap.Time, len(snap.Entries), snap.Entries, res.Changes, res.Trimmed}
		if out.Changes == nil {
			out.Changes = []record.Change{}
		}
		if !f.diff {
			out.Changes = nil
		}
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	if f.diff {
		if res.Previous.Time.IsZero() {
			fmt.Fprintf(s.Out, "no previous snapshot of %s: nothing to compare\n", kt.name)
			return nil
		}
		fmt.Fprintf(tw, "NAMESPACE\tOWNER\tCONTAINER\tPOD\tWAS\tNOW\n")
		for _, c := range res.Changes {
			was := make([]string, len(c.From))
			for i, d := range c.From {
				was[i] = scan.ShortDigest(d)
			}
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\n", c.Namespace, c.OwnerKind, c.OwnerName, c.Container, c.Pod, strings.Join(was, ","), scan.ShortDigest(c.To))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(s.Out, "\n%d containers changed digest since %s\n", len(res.Changes), res.Previous.Time.Format(time.RFC3339))
		return nil
	}
	fmt.Fprintf(tw, "NAMESPACE\tOWNER\tPOD\tCONTAINER\tDIGEST\tNODE\n")
	for _, e := range snap.Entries {
		d := scan.ShortDigest(e.Digest)
		if d == "" {
			d = "(no repo digest)"
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\n", e.Namespace, e.OwnerKind, e.OwnerName, e.Pod, e.Container, d, e.Node)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "\nrecorded %d containers of %s in %s\n", len(snap.Entries), kt.name, where)
	return nil
}
