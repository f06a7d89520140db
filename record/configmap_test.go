package record

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regcheck/regcheck/results/recordresult"
)

func TestParseConfigMapRef(t *testing.T) {
	t.Parallel()
	if ns, name, err := ParseConfigMapRef("regcheck/history"); err != nil || ns != "regcheck" || name != "history" {
		t.Errorf("ParseConfigMapRef = %q, %q, %v", ns, name, err)
	}
	for _, bad := range []string{"", "x", "/x", "x/", "a/b/c"} {
		if _, _, err := ParseConfigMapRef(bad); err == nil {
			t.Errorf("ParseConfigMapRef(%q) succeeded", bad)
		}
	}
}

func TestConfigMapCreateUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history"}
	if h, err := st.Load(ctx); err != nil || len(h.Records) != 0 {
		t.Fatalf("Load before create = %+v, %v", h, err)
	}
	if _, err := Save(ctx, st, snap(t0, entry("a", dA))); err != nil {
		t.Fatal(err)
	}
	res, err := Save(ctx, st, snap(t0.Add(time.Hour), entry("a", dB)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].To != dB {
		t.Errorf("changes = %+v", res.Changes)
	}
	cm, err := c.CoreV1().ConfigMaps("regcheck").Get(ctx, "history", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Decode([]byte(cm.Data[ConfigMapKey]))
	if err != nil || len(h.Records) != 2 {
		t.Errorf("stored history = %+v, %v", h, err)
	}
}

func TestConfigMapRetriesConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "regcheck", Name: "history"}})
	conflicts := 2
	c.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "history", fmt.Errorf("the object has been modified"))
		}
		return false, nil, nil
	})
	calls := 0
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history"}
	_, err := st.Update(ctx, func(h *History) error {
		calls++
		h.Merge(snap(t0, entry("a", dA)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Errorf("fn ran %d times, want 3 (two conflicts, then success)", calls)
	}
	h, err := st.Load(ctx)
	if err != nil || len(h.Records) != 1 {
		t.Errorf("stored history = %+v, %v", h, err)
	}
}

func TestConfigMapCorruptIsAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "regcheck", Name: "history"}, Data: map[string]string{ConfigMapKey: "garbage"}})
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history"}
	_, err := Save(ctx, st, snap(t0, entry("a", dA)))
	if err == nil || !strings.Contains(err.Error(), "configmap regcheck/history") {
		t.Fatalf("Save = %v; want an error naming the ConfigMap", err)
	}
	cm, _ := c.CoreV1().ConfigMaps("regcheck").Get(ctx, "history", metav1.GetOptions{})
	if cm.Data[ConfigMapKey] != "garbage" {
		t.Errorf("corrupt ConfigMap was overwritten")
	}
}

func TestConfigMapTrimsOldest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fake.NewClientset()
	var logs bytes.Buffer
	const max = 4096
	st := &ConfigMap{Client: c, Namespace: "regcheck", Name: "history", MaxBytes: max, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	const n = 40
	var last recordresult.UpdateResult
	for i := range n {
		res, err := Save(ctx, st, snap(t0.Add(time.Duration(i)*time.Minute), uniqueEntry(i, 0)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Trimmed > 0 {
			last = res.UpdateResult
		}
	}
	cm, err := c.CoreV1().ConfigMaps("regcheck").Get(ctx, "history", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := cm.Data[ConfigMapKey]
	if len(data) > max {
		t.Errorf("stored %d bytes, limit %d", len(data), max)
	}
	h, err := Decode([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Records) == 0 || len(h.Records) >= n {
		t.Fatalf("kept %d of %d records; want some trimmed, some kept", len(h.Records), n)
	}
	// What is kept is the newest: writer n-1 down to n-len(kept).
	for _, r := range h.Records {
		var w int
		fmt.Sscanf(r.OwnerName, "writer-%d", &w)
		if w < n-len(h.Records) {
			t.Errorf("kept %s although newer records were trimmed", r.OwnerName)
		}
	}
	if last.Trimmed == 0 || !strings.Contains(last.Message, "trimmed the") || !strings.Contains(last.Message, "configmap regcheck/history") {
		t.Errorf("trim result = %+v; want a count and a message naming the ConfigMap", last)
	}
	if !strings.Contains(logs.String(), "trimmed the") {
		t.Errorf("trim was not logged: %q", logs.String())
	}
}

func TestTrimSingleBigCall(t *testing.T) {
	t.Parallel()
	h := NewHistory()
	for i := range 100 {
		h.Merge(snap(t0.Add(time.Duration(i)*time.Second), uniqueEntry(i, 0)))
	}
	b, n, err := trim(h, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 10_000 || n == 0 || len(h.Records) != 100-n {
		t.Errorf("trim: %d bytes, %d trimmed, %d kept", len(b), n, len(h.Records))
	}
	// A trimmed history fits: trimming it again drops nothing.
	if _, n2, _ := trim(h, 10_000); n2 != 0 {
		t.Errorf("second trim dropped %d more", n2)
	}
}
