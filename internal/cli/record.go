package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/report"
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

With --configmap NS/NAME the history lives in the cluster, for a CronJob, in
ConfigMaps under the 1 MiB object limit: NAME holds every container's newest
records and last transition, then the newer history; NAME-1 … NAME-4 hold the
older history, the oldest overwritten (and said so) when all are full.

With --diff it prints the containers now running a different digest than at
the previous snapshot. regcheck pin --from-records pins to what was recorded.`,
		Example: `  regcheck record -A
  regcheck record -A --diff
  regcheck record -A --configmap regcheck/regcheck-history   # in-cluster, as deploy/cronjob.yaml does`,
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
	if !slices.Contains(report.RecordFormats, f.output) {
		return usageError(fmt.Errorf("unknown output format %q (want %s)", f.output, strings.Join(report.RecordFormats, " or ")))
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
	st, where, err := f.store(kt, g)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	inv, err := kt.inventory(ctx, g.logger)
	if err != nil {
		return err
	}
	res, err := record.Save(ctx, st, record.FromInventory(kt.name, time.Now(), inv))
	if err != nil {
		return fmt.Errorf("saving the record: %w", err)
	}
	g.logger.Info("recorded", "cluster", kt.name, "containers", len(res.Snapshot.Entries), "store", where)
	if err := pub.publish(ctx, metrics.RecordSeries(res.Snapshot, res, start, time.Now()), nil); err != nil {
		return err
	}
	if f.diff {
		return report.RecordDiff(s.Out, f.output, res)
	}
	return report.RecordSnapshot(s.Out, f.output, res, where)
}

// store is where the history is kept, and its name for messages: the
// ConfigMap of --configmap, else the file of --out (by default in
// $XDG_STATE_HOME).
func (f *recordFlags) store(kt *kubeTarget, g *globals) (record.Store, string, error) {
	if f.configMap != "" {
		ns, name, err := record.ParseConfigMapRef(f.configMap)
		if err != nil {
			return nil, "", usageError(err)
		}
		return &record.ConfigMap{Client: kt.client, Namespace: ns, Name: name, Archives: record.DefaultConfigMapArchives,
			Logger: g.logger}, "configmap " + f.configMap, nil
	}
	path := f.out
	if path == "" {
		var err error
		if path, err = record.DefaultPath(); err != nil {
			return nil, "", err
		}
	}
	return &record.File{Path: path}, path, nil
}
