package record

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/regcheck/regcheck/results/recordresult"
)

// ConfigMapKey is the data key holding the history.
const ConfigMapKey = "history.json"

// DefaultConfigMapMaxBytes is the default size limit of the serialized
// history: a ConfigMap holds at most 1 MiB of data, key included.
const DefaultConfigMapMaxBytes = 1<<20 - 1024

// conflictBackoff spaces retries after a conflicting write: about ten tries
// over a few seconds, enough for several CronJob runs racing each other.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 20 * time.Millisecond, Factor: 1.6, Jitter: 0.5, Cap: 2 * time.Second}

// ConfigMap is a history stored in a ConfigMap under ConfigMapKey, for
// running `regcheck record` or `regcheck watch` in the cluster. It needs
// get and update (create if the ConfigMaps are not made beforehand) on
// configmaps Name and, with Archives, Name-1 … Name-Archives in Namespace.
//
// With Archives 0 the history is one ConfigMap, trimmed oldest first to
// MaxBytes. With Archives > 0 the store is split: the head (Name) holds
// what a reconcile needs, every owner container's newest records and last
// transition, and as much newer history as fits; what does not fit moves
// to the archives, filled in turn, the oldest generation overwritten when
// all are full. Load reads them all as one history.
type ConfigMap struct {
	Client          kubernetes.Interface
	Namespace, Name string
	// MaxBytes is the size limit of each ConfigMap's serialized history; 0
	// means DefaultConfigMapMaxBytes. Beyond it Update trims the oldest
	// records (Archives 0) or moves them to the archives.
	MaxBytes int
	// Archives is how many archive ConfigMaps hold the older history; 0
	// keeps all of it in one ConfigMap.
	Archives int
	// Logger, when set, gets a warning whenever records are trimmed.
	Logger *slog.Logger

	decoded decodedArchives
}

var _ Store = (*ConfigMap)(nil)

// ParseConfigMapRef splits "NAMESPACE/NAME".
func ParseConfigMapRef(ref string) (namespace, name string, err error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("configmap %q: want NAMESPACE/NAME", ref)
	}
	return ns, name, nil
}

func (c *ConfigMap) String() string { return "configmap " + c.Namespace + "/" + c.Name }

// Load returns the stored history, or an empty one if the ConfigMap or its key does not exist.
func (c *ConfigMap) Load(ctx context.Context) (*History, error) {
	cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return NewHistory(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting %s: %w", c, err)
	}
	h, err := c.decode(cm)
	if err != nil || c.Archives <= 0 {
		return h, err
	}
	arcs, err := c.loadArchives(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range arcs {
		h.Absorb(a.h)
	}
	return h, nil
}

func (c *ConfigMap) decode(cm *corev1.ConfigMap) (*History, error) {
	data, ok := cm.Data[ConfigMapKey]
	if !ok {
		return NewHistory(), nil
	}
	h, err := Decode([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("reading %s key %s: %w (the ConfigMap is left as it is)", c, ConfigMapKey, err)
	}
	return h, nil
}

// Update gets (or creates) the ConfigMap, calls fn on its history and
// writes it back with the resourceVersion it read, starting over on a
// conflict. fn may run more than once and must only change the history.
// If the result is larger than MaxBytes, the oldest records are trimmed and
// UpdateResult says how many. With Archives, fn gets the head only (every
// owner container's newest records and last transition, and the newer
// history), with the archives too once the head is short of that
// (HeadShortAnnotation), and what no longer fits in it is written to the
// archives before the head is written without it; only an archive
// overwritten when all are full trims.
func (c *ConfigMap) Update(ctx context.Context, fn func(*History) error) (recordresult.UpdateResult, error) {
	max := c.MaxBytes
	if max <= 0 {
		max = DefaultConfigMapMaxBytes
	}
	var res recordresult.UpdateResult
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	err := retry.OnError(conflictBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		res = recordresult.UpdateResult{}
		cm, err := cms.Get(ctx, c.Name, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cm = newConfigMap(c.Namespace, c.Name)
		case err != nil:
			return fmt.Errorf("getting %s: %w", c, err)
		}
		h, err := c.decode(cm)
		if err != nil {
			return err
		}
		if err := c.absorbIfShort(ctx, cm, h); err != nil {
			return err
		}
		if err := fn(h); err != nil {
			return err
		}
		data, short, err := c.fit(ctx, h, max, &res)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[ConfigMapKey] = string(data)
		markShort(cm, short)
		if create {
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating %s: %w", c, err)
			}
			return nil
		}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating %s: %w", c, err)
		}
		return nil
	})
	if err != nil {
		return recordresult.UpdateResult{}, err
	}
	if res.Trimmed > 0 && c.Logger != nil {
		c.Logger.Warn(res.Message, "configmap", c.Namespace+"/"+c.Name, "trimmed", res.Trimmed)
	}
	return res, nil
}

// fit makes h fit in the head, max bytes, and returns its encoding: with
// archives, what does not fit is written to them first (Split, spill),
// and short says the head no longer holds what a reconcile needs of every
// container; without, the oldest items are trimmed. res says what was
// trimmed.
func (c *ConfigMap) fit(ctx context.Context, h *History, max int, res *recordresult.UpdateResult) (data []byte, short bool, err error) {
	if c.Archives <= 0 {
		before := h.items()
		data, n, err := trim(h, max)
		if err != nil {
			return nil, false, fmt.Errorf("encoding history for %s: %w", c, err)
		}
		if n > 0 {
			res.Trimmed = n
			res.Message = trimMessage(c.String(), max, n, before, h.Records)
		}
		return data, false, nil
	}
	head, rest, short, err := split(h, max)
	if err != nil {
		return nil, false, fmt.Errorf("splitting history for %s: %w", c, err)
	}
	if rest.items() > 0 {
		if res.Trimmed, res.Message, err = c.spill(ctx, head, rest, max); err != nil {
			return nil, false, err
		}
	}
	if data, err = Encode(head, false); err != nil {
		return nil, false, fmt.Errorf("encoding history for %s: %w", c, err)
	}
	return data, short, nil
}

// HeadShortAnnotation marks a split store's head that no longer holds
// what a reconcile needs of every container (past its ceiling): an Update
// then gives its function the archives too, so that record compares each
// container with its newest record wherever it is kept.
const HeadShortAnnotation = "regcheck.io/history-head-short"

// absorbIfShort adds the archives' history to h, read from cm, when cm
// says its head fell short.
func (c *ConfigMap) absorbIfShort(ctx context.Context, cm *corev1.ConfigMap, h *History) error {
	if c.Archives <= 0 || cm.Annotations[HeadShortAnnotation] != "true" {
		return nil
	}
	arcs, err := c.loadArchives(ctx)
	if err != nil {
		return err
	}
	for _, a := range arcs {
		h.Absorb(a.h)
	}
	return nil
}

// markShort sets or clears cm's HeadShortAnnotation.
func markShort(cm *corev1.ConfigMap, short bool) {
	if !short {
		delete(cm.Annotations, HeadShortAnnotation)
		return
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[HeadShortAnnotation] = "true"
}
