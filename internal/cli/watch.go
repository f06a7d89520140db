package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/watch"
)

type watchFlags struct {
	kube          kubeFlags
	registry      registryFlags
	out           string
	configMap     string
	metricsAddr   string
	interval      time.Duration
	syncTimeout   time.Duration
	flushInterval time.Duration
	historyLimit  int
	walkDebounce  time.Duration
	leaderElect   bool
	leaseNS       string
	leaseID       string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	debugPprof    bool
	pullSecrets   bool
	policies      policyFlags
}

func newWatchCmd(s Streams, g *globals) *cobra.Command {
	f := &watchFlags{}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Record every running digest the moment it changes, flag unplanned upgrades, and serve metrics",
		Long: `Watch runs until SIGTERM or SIGINT, with informers on pods and on the workloads
regcheck record reads (no GET per pod). Every container's running digest (init,
ephemeral and image volumes too) goes into the same history as regcheck record
keeps (--out or --configmap) within about --flush-interval of the API server
showing it: its first sighting, and each transition from one digest to another
with its time, restart count and the last termination's reason and exit code.
Writes are batched (at most one per --flush-interval) and atomic; a ConfigMap
that regcheck record writes too is retried on conflict. At start, and when it
becomes the leader, watch reconciles what runs with the history, so that a
change made while no watcher ran is still recorded.

A change of running digest while the spec's image string stayed the same (a
tag moved, then a restart or a reschedule pulled it) is an unplanned upgrade:
regcheck_unplanned_upgrade is 1 while it stands, and the next walk reports it
(unplanned-upgrade) with the previous digest, whether the registry still holds
all of it, and the commands that pin the workload back; a crash loop since the
change is said to have begun with it.

--metrics-bind-address serves /metrics (the families scan and record publish,
regcheck_container_image_available per owner container, and the watcher's own
health), /healthz and /readyz (200 once the informers synced). Unless GOGC is
set, watch collects garbage at GOGC=50 (Go's default is 100): a peak heap of
about 1.5 times what it holds rather than twice. Every image in
use is walked down to its blobs each --interval, and a new reference soon
after it appears (--walk-debounce), with the manifest cache and the
registry flags scan takes; --pull-secrets and the cluster's image policies
(--policies) apply to each walk as in scan --cluster. On OpenShift each walk
goes through the cluster's mirror sets (ImageDigestMirrorSet,
ImageTagMirrorSet, ImageContentSourcePolicy), read again before it, as scan
--cluster walks them; --registries-config names the nodes' configuration
instead.

With --leader-elect, replicas share a Lease: only the holder writes the
history, walks and exports the image series; every replica is ready.

Exit codes: 0 after SIGTERM or SIGINT, pending writes flushed; 2 usage or
configuration error; 3 the cluster or the history could not be read at start.`,
		Example: `  regcheck watch -A --out history.json --metrics-bind-address 127.0.0.1:8080
  regcheck watch -A --configmap regcheck/regcheck-history --leader-elect   # as deploy/watch/ runs it`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWatch(cmd, g, f) },
	}
	fl := cmd.Flags()
	f.kube.addTo(fl)
	fl.StringVar(&f.out, "out", "", "history file (default $XDG_STATE_HOME/regcheck/history.json)")
	fl.StringVar(&f.configMap, "configmap", "", "keep the history in this ConfigMap (NAMESPACE/NAME) instead of a file")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "serve /metrics, /healthz and /readyz on this address; 0 serves nothing")
	fl.DurationVar(&f.syncTimeout, "sync-timeout", 2*time.Minute, "give up (exit 3) when the informers have not synced within this; a denied LIST or WATCH fails /readyz and is logged at once")
	fl.DurationVar(&f.interval, "interval", time.Hour, "walk every image in use down to its blobs this often")
	fl.DurationVar(&f.flushInterval, "flush-interval", time.Second, "write the history at most this often (changes wait at most this long)")
	fl.IntVar(&f.historyLimit, "history-limit", 10, "keep this many records and transitions of each container in the history, the newest (and always its last transition and the digest an unplanned upgrade left); 0 keeps everything")
	fl.DurationVar(&f.walkDebounce, "walk-debounce", 10*time.Second, "walk a new image reference this long after it appears (more appearing meanwhile join the walk)")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "share a Lease with other replicas: only its holder writes the history and walks images")
	fl.StringVar(&f.leaseNS, "leader-election-namespace", "", "namespace of the Lease (default the pod's namespace in a cluster, else the context's)")
	fl.StringVar(&f.leaseID, "leader-election-id", "regcheck-watch", "name of the Lease")
	fl.DurationVar(&f.leaseDuration, "lease-duration", 15*time.Second, "how long replicas wait after the last renewal before taking the Lease")
	fl.DurationVar(&f.renewDeadline, "renew-deadline", 10*time.Second, "how long the leader retries renewing before it stops writing")
	fl.DurationVar(&f.retryPeriod, "retry-period", 2*time.Second, "how often replicas try to take or renew the Lease")
	fl.BoolVar(&f.pullSecrets, "pull-secrets", false, "walk with each pod's imagePullSecrets and its service account's, as the kubelet does and as scan --cluster --pull-secrets (needs get on secrets and serviceaccounts)")
	f.policies.addTo(fl, watchPoliciesUsage)
	fl.BoolVar(&f.debugPprof, "debug-pprof", false, "also serve Go's profiles under /debug/pprof/ on --metrics-bind-address (heap, goroutines, CPU): for measuring, not for an address others reach")
	f.registry.addTo(fl, true)
	return cmd
}

// check rejects flags that do not go together.
func (f *watchFlags) check() error {
	if err := f.policies.load(); err != nil {
		return err
	}
	switch {
	case f.out != "" && f.configMap != "":
		return errors.New("--out and --configmap cannot be used together")
	case f.historyLimit < 0:
		return errors.New("--history-limit cannot be negative")
	case f.interval <= 0 || f.flushInterval <= 0 || f.walkDebounce <= 0:
		return errors.New("--interval, --flush-interval and --walk-debounce must be positive")
	case !f.leaderElect && f.leaseNS != "":
		return errors.New("--leader-election-namespace goes with --leader-elect")
	case f.leaderElect && !(f.retryPeriod > 0 && f.retryPeriod < f.renewDeadline && f.renewDeadline < f.leaseDuration):
		return errors.New("want 0 < --retry-period < --renew-deadline < --lease-duration")
	}
	return nil
}

// watchGOGC is the watcher's GOGC unless the environment sets one. A
// watcher's heap is mostly what it holds for its life (the informers'
// objects, the history, each container's state), and it collects at half
// that heap's growth, not Go's default of all of it: its peak heap is then
// about 1.5 times the live heap instead of twice, for no CPU that
// BenchmarkWatch tells apart (0.22 cores in its minute of churn, 0.23 at
// 100). Prometheus made the same change of its own default (v2.53, from
// 100 to 50).
const watchGOGC = 50

// gcPercent sets watchGOGC when GOGC is not in the environment.
func gcPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(watchGOGC)
	}
}

func runWatch(cmd *cobra.Command, g *globals, f *watchFlags) error {
	if err := f.check(); err != nil {
		return usageError(err)
	}
	// client-go's informers and leader election log through klog: to
	// stderr as every regcheck log, at the level asked for.
	klog.SetSlogLogger(g.logger)
	gcPercent()
	kt, err := f.kube.connect()
	if err != nil {
		return err
	}
	rf := &recordFlags{out: f.out, configMap: f.configMap}
	st, where, err := rf.store(kt, g)
	if err != nil {
		return err
	}
	client, err := protobufClient(kt)
	if err != nil {
		return err
	}
	cfg := watch.Config{Client: client, Cluster: kt.name, Namespace: kt.namespace, Store: st,
		FlushInterval: f.flushInterval, HistoryLimit: f.historyLimit, Interval: f.interval, Debounce: f.walkDebounce, SyncTimeout: f.syncTimeout,
		ScanOptions: f.registry.options(g), Logger: g.logger, HistoryHint: f.historyHint(where),
		PullSecrets: f.pullSecrets, Admission: f.admission(kt, g.logger)}
	if f.registry.pullPath == "" {
		// As scan --cluster: the OpenShift mirror sets are the nodes' pull
		// path, read before each walk; --registries-config names it instead.
		cfg.PullPath = func(ctx context.Context) (*pullpath.Config, error) { return kt.mirrorSets(ctx, g.logger) }
	}
	if f.leaderElect {
		if cfg.Leader, err = f.leader(kt); err != nil {
			return err
		}
	}
	w, err := watch.New(cfg)
	if err != nil {
		return usageError(err)
	}
	ctx := cmd.Context()
	h := w.Metrics().Handler()
	if f.debugPprof {
		h = withPprof(h)
	}
	stop, err := serveMetrics(ctx, f.metricsAddr, h)
	if err != nil {
		return usageError(err)
	}
	defer stop()
	g.logger.Info("watching", "cluster", kt.name, "namespace", kt.namespace, "store", where, "leader-elect", f.leaderElect)
	if err := w.Run(ctx); err != nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	g.logger.Info("stopped: pending writes flushed")
	return nil
}

// admission reads the cluster's image policies, at each periodic walk,
// as scan --cluster does (a policy added applies from the next one): the
// check applied to its results, and the policies that could not be read;
// nil with --policies=false.
func (f *watchFlags) admission(kt *kubeTarget, logger *slog.Logger) func(context.Context) (cluster.Then, []types.InputError, error) {
	if !f.policies.enabled {
		return nil
	}
	return func(ctx context.Context) (cluster.Then, []types.InputError, error) {
		ps, problems, err := clusterPolicies(ctx, kt, logger)
		if err != nil || len(ps.Rules) == 0 && !f.policies.changed() {
			return nil, problems, err
		}
		return policyCheck(ps, &f.policies), problems, nil
	}
}

// protobufClient is a typed client of kt's cluster that asks for
// protobuf (JSON for what has none): the informers' LISTs of every pod
// decode in a fraction of the memory and time JSON takes.
func protobufClient(kt *kubeTarget) (kubernetes.Interface, error) {
	if kt.config == nil {
		return kt.client, nil
	}
	cfg := rest.CopyConfig(kt.config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, usageError(fmt.Errorf("creating a Kubernetes client: %w", err))
	}
	return c, nil
}

// historyHint names the history as pin --from-records reads it.
func (f *watchFlags) historyHint(where string) string {
	if f.configMap == "" {
		return where
	}
	ns, name, _ := record.ParseConfigMapRef(f.configMap)
	return fmt.Sprintf(`<(kubectl -n %s get configmap %s -o jsonpath='{.data.history\.json}')`, ns, name)
}

// leader is the leader election the flags ask for, with a client of its
// own so that the informers' requests never delay a renewal.
func (f *watchFlags) leader(kt *kubeTarget) (*watch.LeaderConfig, error) {
	lc := &watch.LeaderConfig{Namespace: f.leaseNS, Name: f.leaseID, Identity: identity(),
		LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod}
	if lc.Namespace == "" {
		lc.Namespace = podNamespace(kt)
	}
	if kt.config != nil {
		c, err := kubernetes.NewForConfig(rest.CopyConfig(kt.config))
		if err != nil {
			return nil, usageError(fmt.Errorf("creating the leader election client: %w", err))
		}
		lc.Client = c
	}
	return lc, nil
}

// podNamespace is the namespace the pod runs in (POD_NAMESPACE, or the
// service account's), else the one the watch reads, else "default".
func podNamespace(kt *kubeTarget) string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b))
	}
	if kt.namespace != "" {
		return kt.namespace
	}
	return "default"
}

// identity names this replica in the Lease: the pod's name (the host
// name), and a random suffix so that two processes on one host differ.
func identity() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

// withPprof serves net/http/pprof's handlers under /debug/pprof/ beside h.
func withPprof(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// serveMetrics serves h on addr until the returned stop is called; "0"
// or "" serves nothing. A bind error is returned at once.
func serveMetrics(ctx context.Context, addr string, h http.Handler) (stop func(), err error) {
	if addr == "0" || addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-bind-address: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}
