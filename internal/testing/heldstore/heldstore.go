// Package heldstore is a history store for tests whose chosen call stops
// until the test releases it, whatever its context: the answer that was
// on its way when a replica lost its Lease. The watcher's unit tests and
// its end-to-end tests on the real apiserver share it.
package heldstore

import (
	"context"
	"sync/atomic"

	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/results/recordresult"
)

// Store wraps a record.Store: the After+1th call of Method ("Load" or
// "Update") closes Entered and waits for Release to be closed. Commits
// counts the Updates that committed.
type Store struct {
	record.Store
	Method  string
	After   int32
	Entered chan struct{}
	Release chan struct{}
	Commits atomic.Int32

	calls atomic.Int32
}

// New returns a Store over st that holds the after+1th call of method.
func New(st record.Store, method string, after int32) *Store {
	return &Store{Store: st, Method: method, After: after, Entered: make(chan struct{}), Release: make(chan struct{})}
}

func (h *Store) hold(method string) {
	if h.Method == method && h.calls.Add(1) == h.After+1 {
		close(h.Entered)
		<-h.Release
	}
}

// Load holds when it is the chosen call, then loads.
func (h *Store) Load(ctx context.Context) (*record.History, error) {
	h.hold("Load")
	return h.Store.Load(ctx)
}

// Update holds when it is the chosen call, then updates and counts a
// commit.
func (h *Store) Update(ctx context.Context, fn func(*record.History) error) (recordresult.UpdateResult, error) {
	h.hold("Update")
	res, err := h.Store.Update(ctx, fn)
	if err == nil {
		h.Commits.Add(1)
	}
	return res, err
}
