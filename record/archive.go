package record

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GenerationAnnotation numbers an archive ConfigMap's contents: the
// archive of the greatest generation is the one being filled, the least
// the next to be overwritten.
const GenerationAnnotation = "regcheck.io/history-generation"

// DefaultConfigMapArchives is how many archive ConfigMaps (NAME-1 …
// NAME-4) regcheck's commands keep beside the head: with the head, about
// 5 MiB of history.
const DefaultConfigMapArchives = 4

// archive is one of a split store's older-history ConfigMaps as read.
type archive struct {
	cm     *corev1.ConfigMap
	h      *History
	gen    int
	exists bool
}

// ArchiveName is the name of archive i (1-based) of the ConfigMap store name.
func ArchiveName(name string, i int) string { return name + "-" + strconv.Itoa(i) }

// loadArchives gets every archive ConfigMap; one that does not exist yet
// is empty, one that cannot be read is an error (and never overwritten).
func (c *ConfigMap) loadArchives(ctx context.Context) ([]*archive, error) {
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	out := make([]*archive, 0, c.Archives)
	for i := 1; i <= c.Archives; i++ {
		name := ArchiveName(c.Name, i)
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			out = append(out, &archive{cm: newConfigMap(c.Namespace, name), h: NewHistory()})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("getting configmap %s/%s: %w", c.Namespace, name, err)
		}
		a := &archive{cm: cm, h: NewHistory(), exists: true}
		if s, ok := cm.Annotations[GenerationAnnotation]; ok {
			if a.gen, err = strconv.Atoi(s); err != nil {
				return nil, fmt.Errorf("configmap %s/%s: annotation %s %q: %w", c.Namespace, name, GenerationAnnotation, s, err)
			}
		}
		if h, ok := c.decoded.get(name, cm.ResourceVersion); ok {
			a.h = h
		} else if _, ok := cm.Data[ConfigMapKey]; ok {
			if a.h, err = Decode([]byte(cm.Data[ConfigMapKey])); err != nil {
				return nil, fmt.Errorf("reading configmap %s/%s key %s: %w (the ConfigMap is left as it is)", c.Namespace, name, ConfigMapKey, err)
			}
			c.decoded.put(name, cm.ResourceVersion, a.h)
		}
		out = append(out, a)
	}
	return out, nil
}

// spill writes rest, what no longer fits in head, into the archives
// before the head is written without it, so that every item is stored
// somewhere at every moment. Items an archive already holds are not
// written again. They go into the archive being filled while it fits;
// else into the archive of the oldest generation, whose older history is
// then trimmed (counted in the result) but for what a reconcile needs
// that no other ConfigMap holds (carried into the new generation); rest's
// oldest items are trimmed too if rest alone does not fit.
func (c *ConfigMap) spill(ctx context.Context, head, rest *History, max int) (trimmed int, msg string, err error) {
	arcs, err := c.loadArchives(ctx)
	if err != nil {
		return 0, "", err
	}
	all := NewHistory()
	cur, oldest := arcs[0], arcs[0]
	for _, a := range arcs {
		all.Absorb(a.h)
		if a.gen > cur.gen {
			cur = a
		}
		if a.gen < oldest.gen {
			oldest = a
		}
	}
	rest = all.lacks(rest)
	if rest.items() == 0 {
		return 0, "", nil
	}
	if cur.gen > 0 {
		merged := cur.h.clone()
		merged.Absorb(rest)
		if b, err := Encode(merged, false); err == nil && len(b) <= max {
			return 0, "", c.writeArchive(ctx, cur, merged, b, cur.gen)
		}
	}
	gone := 0
	if oldest.gen > 0 {
		carry := carried(head, rest, arcs, oldest)
		rest.Absorb(carry)
		gone = oldest.h.items() - carry.items()
		msg = fmt.Sprintf("history in %s: archive %s (generation %d, %d records and transitions, the oldest trimmed) overwritten with the next",
			c, oldest.cm.Name, oldest.gen, gone)
	}
	keep, drop, err := Split(rest, max) // what a reconcile needs first, as in the head
	if err != nil {
		return 0, "", fmt.Errorf("splitting history for %s: %w", oldest.cm.Name, err)
	}
	b, err := Encode(keep, false)
	if err != nil {
		return 0, "", fmt.Errorf("encoding history for %s: %w", oldest.cm.Name, err)
	}
	if n := drop.items(); n > 0 {
		msg = strings.TrimPrefix(msg+"; ", "; ") + fmt.Sprintf("history in %s exceeded its head and archives: trimmed %d of %d records and transitions moving out of the head (what a reconcile needs last, then the oldest)",
			c, n, rest.items())
	}
	return gone + drop.items(), msg, c.writeArchive(ctx, oldest, keep, b, cur.gen+1)
}

// writeArchive stores data as archive a's history of generation gen, with
// the resourceVersion it was read with: a conflict starts the Update over.
func (c *ConfigMap) writeArchive(ctx context.Context, a *archive, h *History, data []byte, gen int) error {
	if a.cm.Annotations == nil {
		a.cm.Annotations = map[string]string{}
	}
	if a.cm.Data == nil {
		a.cm.Data = map[string]string{}
	}
	a.cm.Annotations[GenerationAnnotation] = strconv.Itoa(gen)
	a.cm.Data[ConfigMapKey] = string(data)
	cms := c.Client.CoreV1().ConfigMaps(c.Namespace)
	var out *corev1.ConfigMap
	var err error
	if a.exists {
		out, err = cms.Update(ctx, a.cm, metav1.UpdateOptions{})
	} else {
		out, err = cms.Create(ctx, a.cm, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing configmap %s/%s: %w", c.Namespace, a.cm.Name, err)
	}
	c.decoded.put(a.cm.Name, out.ResourceVersion, h)
	return nil
}

// decodedArchives keeps each archive's decoded history by the
// resourceVersion it was read or written at: a spill (at scale, nearly
// every write of the head) GETs every archive, and decodes only those
// that changed since (up to 4 MiB of JSON each time before). A
// resourceVersion of "" is never kept. The histories kept are never
// changed: spill only reads them.
type decodedArchives struct {
	mu sync.Mutex
	m  map[string]decodedArchive
}

// decodedArchive is one archive's history at one resourceVersion.
type decodedArchive struct {
	rv string
	h  *History
}

// get returns the history of archive name at rv, if kept.
func (d *decodedArchives) get(name, rv string) (*History, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, ok := d.m[name]
	if !ok || rv == "" || x.rv != rv {
		return nil, false
	}
	return x.h, true
}

// put keeps h as archive name's history at rv.
func (d *decodedArchives) put(name, rv string, h *History) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rv == "" {
		delete(d.m, name)
		return
	}
	if d.m == nil {
		d.m = map[string]decodedArchive{}
	}
	d.m[name] = decodedArchive{rv, h}
}

// newConfigMap is an empty ConfigMap the store creates.
func newConfigMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "regcheck"}}}
}

// carried returns what a reconcile needs (rankNewest) that only the
// archive gone holds: of the whole history (head, rest and every archive),
// the items of that rank that gone has and no other part does.
func carried(head, rest *History, arcs []*archive, gone *archive) *History {
	view, others := head.clone(), head.clone()
	view.Absorb(rest)
	others.Absorb(rest)
	for _, a := range arcs {
		view.Absorb(a.h)
		if a != gone {
			others.Absorb(a.h)
		}
	}
	need := NewHistory()
	for _, it := range view.ranked() {
		switch {
		case it.rank != rankNewest:
		case it.rec >= 0:
			need.Records = append(need.Records, view.Records[it.rec])
		default:
			need.Transitions = append(need.Transitions, view.Transitions[it.tr])
		}
	}
	need.sort()
	need.sortTransitions()
	return others.lacks(need)
}
