// Package runstore is what a service of background runs (chaos runs,
// comparisons, experiments) keeps: the runs by id in the order started,
// forgetting the oldest finished beyond a bound, and the goroutines
// playing them, which Close stops and waits for.
package runstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
)

// ErrClosed is Go's answer once the Group is closed.
var ErrClosed = errors.New("service closed")

// Kept is the runs of one kind, oldest first. It has no lock of its own:
// its service's lock guards it and the runs' states alike.
type Kept[T any] struct {
	byID  map[string]*T
	order []string
}

// Add remembers st under id and forgets the oldest finished runs (done)
// beyond maxKept; a run that has not finished is never forgotten.
func (k *Kept[T]) Add(id string, st *T, maxKept int, done func(*T) bool) {
	if k.byID == nil {
		k.byID = map[string]*T{}
	}
	k.byID[id] = st
	k.order = append(k.order, id)
	for i := 0; len(k.order) > maxKept && i < len(k.order); {
		if id := k.order[i]; done(k.byID[id]) {
			delete(k.byID, id)
			k.order = slices.Delete(k.order, i, i+1)
			continue
		}
		i++
	}
}

// Get returns run id.
func (k *Kept[T]) Get(id string) (*T, bool) {
	st, ok := k.byID[id]
	return st, ok
}

// Newest returns every run, newest first.
func (k *Kept[T]) Newest() []*T {
	out := make([]*T, 0, len(k.order))
	for i := len(k.order) - 1; i >= 0; i-- {
		out = append(out, k.byID[k.order[i]])
	}
	return out
}

// Copies returns a copy of every run, newest first.
func (k *Kept[T]) Copies() []T {
	out := make([]T, 0, len(k.order))
	for _, st := range k.Newest() {
		out = append(out, *st)
	}
	return out
}

// Group runs a service's runs in the background until Close. The zero
// value is not usable: NewGroup.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

// NewGroup returns an open Group.
func NewGroup() *Group {
	g := &Group{}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g
}

// Context ends when the Group closes.
func (g *Group) Context() context.Context { return g.ctx }

// Go runs f in its own goroutine with the Group's context; ErrClosed
// (and f not run) once the Group is closed. register, if not nil, runs
// first, before Go returns and only when f will run: where a service
// remembers the run.
func (g *Group) Go(register func(), f func(ctx context.Context)) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	g.wg.Add(1)
	g.mu.Unlock()
	if register != nil {
		register()
	}
	go func() {
		defer g.wg.Done()
		f(g.ctx)
	}()
	return nil
}

// Close ends every run's context and waits for them.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
}

// NewID returns a new run id: 16 hex digits.
func NewID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
