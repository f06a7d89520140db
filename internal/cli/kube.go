package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/mirrorsets"
	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/types"
)

// kubeFlags are kubectl's flags for reaching a cluster.
type kubeFlags struct {
	kubeconfig    string
	context       string
	namespace     string
	allNamespaces bool
}

func (k *kubeFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default $KUBECONFIG or ~/.kube/config; in a pod, its service account)")
	fs.StringVar(&k.context, "context", "", "kubeconfig context to use (default the current context)")
	fs.StringVarP(&k.namespace, "namespace", "n", "", "namespace to read (default the context's namespace)")
	fs.BoolVarP(&k.allNamespaces, "all-namespaces", "A", false, "read every namespace")
}

// set reports whether any of the flags was given, for commands where they
// only make sense together with another flag (scan --cluster, say).
func (k *kubeFlags) set() bool {
	return k.allNamespaces || k.namespace != "" || k.context != "" || k.kubeconfig != ""
}

// kubeTarget is a connected cluster: its clients, a name for records, and
// the namespace to read ("" for all).
type kubeTarget struct {
	client kubernetes.Interface
	// dynamic reads the custom resources regcheck knows (workload CRDs,
	// image policies) where their CRDs are installed.
	dynamic dynamic.Interface
	// config is the REST config both clients were made from, for clients
	// a command makes of its own (leader election's, an informer's).
	config    *rest.Config
	name      string
	namespace string
	// said is what mirrorSets last said of the cluster's mirror sets (the
	// kinds not served, the objects walked through): a watcher reads them
	// before every walk and says each thing once, and again when it
	// changes.
	said   string
	saidMu sync.Mutex
}

// inventory lists what the cluster runs, logging what it could not read.
// A failure is the check's, not the user's: exit 3.
func (t *kubeTarget) inventory(ctx context.Context, logger *slog.Logger) (*inventory.Inventory, error) {
	inv, err := inventory.List(ctx, t.client, t.namespace)
	if err != nil {
		return nil, &exitError{code: ExitIncomplete, err: fmt.Errorf("reading cluster %s: %w", t.name, err)}
	}
	for _, w := range inv.Warnings {
		logger.Warn(w, "cluster", t.name)
	}
	if t.dynamic != nil {
		// Discovery first: a kind whose CRD is not installed is not
		// listed, so a ServiceAccount without RBAC on it gets no 403.
		custom := inventory.Custom(ctx, t.dynamic, t.client.Discovery(), t.namespace)
		for _, w := range custom.Warnings {
			logger.Warn(w, "cluster", t.name)
		}
		if len(custom.NotServed) > 0 {
			logger.Info("workload kinds not served, skipped", "cluster", t.name, "resources", custom.NotServed)
		}
		inv.AddTemplates(custom.Templates)
	}
	logger.Info("cluster read", "cluster", t.name, "containers", len(inv.Containers))
	return inv, nil
}

// connect loads the kubeconfig as kubectl does (falling back to the
// in-cluster service account) and returns a client. Loading stays here, in
// cmd; the libraries take a kubernetes.Interface.
func (k *kubeFlags) connect() (*kubeTarget, error) {
	if k.allNamespaces && k.namespace != "" {
		return nil, usageError(errors.New("-n/--namespace and -A/--all-namespaces cannot be used together"))
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, usageError(fmt.Errorf("loading kubeconfig: %w", err))
	}
	cfg.UserAgent = "regcheck/" + Version
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, usageError(fmt.Errorf("creating a Kubernetes client: %w", err))
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, usageError(fmt.Errorf("creating a Kubernetes dynamic client: %w", err))
	}
	t := &kubeTarget{client: client, dynamic: dyn, config: cfg, name: cfg.Host}
	if raw, err := cc.RawConfig(); err == nil {
		if k.context != "" {
			t.name = k.context
		} else if raw.CurrentContext != "" {
			t.name = raw.CurrentContext
		}
	}
	switch {
	case k.allNamespaces:
	case k.namespace != "":
		t.namespace = k.namespace
	default:
		ns, _, err := cc.Namespace()
		if err != nil {
			return nil, usageError(fmt.Errorf("reading the context's namespace: %w", err))
		}
		t.namespace = ns
	}
	return t, nil
}

// mirrorSets is the pull path an OpenShift cluster's nodes follow: the
// registries.conf the Machine Config Operator renders from the cluster's
// ImageDigestMirrorSets, ImageTagMirrorSets and ImageContentSourcePolicies
// (package mirrorsets). Nil when the cluster serves none of those kinds
// (said once in the log) or holds no mirror. A warning (a list that
// failed) is said each time.
func (t *kubeTarget) mirrorSets(ctx context.Context, logger *slog.Logger) (*pullpath.Config, error) {
	cfg, _, err := t.readMirrorSets(ctx, logger)
	return cfg, err
}

// readMirrorSets is mirrorSets with what could not be used as input
// errors for the report: an object left out (its entry names a URL), or
// the rendering CRI-O would refuse, which leaves every mirror set out and
// the images walked from their registries.
func (t *kubeTarget) readMirrorSets(ctx context.Context, logger *slog.Logger) (*pullpath.Config, []types.InputError, error) {
	if t.dynamic == nil {
		return nil, nil, nil
	}
	res := mirrorsets.List(ctx, t.dynamic, t.client.Discovery())
	var problems []types.InputError
	source := "mirror sets of cluster " + t.name
	for _, w := range res.Warnings {
		logger.Warn(w, "cluster", t.name)
		problems = append(problems, types.InputError{Source: source, Message: w})
	}
	if !t.sayOnce(fmt.Sprint(res.NotServed, len(res.Sets.Objects))) {
		logger = slog.New(slog.DiscardHandler)
	}
	if len(res.NotServed) > 0 {
		logger.Info("mirror set kinds not served: no mirrors from them", "cluster", t.name, "resources", res.NotServed)
	}
	if res.Sets.Empty() {
		return nil, problems, nil
	}
	data, err := mirrorsets.Render(res.Sets)
	if err != nil {
		return nil, nil, fmt.Errorf("rendering the mirror sets of cluster %s: %w", t.name, err)
	}
	name := "registries.conf rendered from the mirror sets of cluster " + t.name
	cfg, err := pullpath.ParseRegistriesConf(name, data)
	if err != nil {
		msg := fmt.Sprintf("%v: CRI-O would refuse the registries.conf the mirror sets render to; the images are walked from their registries", err)
		logger.Warn(msg, "cluster", t.name)
		return nil, append(problems, types.InputError{Source: source, Message: msg}), nil
	}
	logger.Info("walking as CRI-O through the cluster's mirror sets", "cluster", t.name, "objects", len(res.Sets.Objects))
	logger.Debug("registries.conf rendered from the mirror sets", "cluster", t.name, "registries.conf", string(data))
	return cfg, problems, nil
}

// sayOnce reports whether what differs from what was said last, and
// remembers it.
func (t *kubeTarget) sayOnce(what string) bool {
	t.saidMu.Lock()
	defer t.saidMu.Unlock()
	if t.said == what {
		return false
	}
	t.said = what
	return true
}
