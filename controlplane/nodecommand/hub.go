package nodecommand

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// hub wakes the long polls and waits of this control node when the store
// changes a command: one watch per control node, however many agents poll.
type hub struct {
	mu    sync.Mutex
	nodes map[string]chan struct{}
	cmds  map[string]*waiter
	// clean marks nodes whose Pending commands are all in queue: their
	// last look at the store found none left, and every Pending change
	// since came through the watch. A poll of a clean node claims from the
	// queue without reading the store; a lost watch, a full queue or a
	// failed claim makes the node unknown again, and the next poll looks.
	clean map[string]bool
	queue map[string][]*store.KeyValue
	// from is the first revision the watch must see: taken when the hub
	// is made, before any waiter looked at the store, so a change made
	// after a look is seen even when Run starts late.
	from int64
}

// queueLimit bounds the Pending changes kept per clean node.
const queueLimit = 1024

type waiter struct {
	ch chan struct{}
	n  int
	// kv is the change that fired the signal, so a waiter need not read
	// the record again.
	kv *store.KeyValue
}

func (s *Service) h() *hub {
	s.hubOnce.Do(func() {
		s.hub = &hub{nodes: map[string]chan struct{}{}, cmds: map[string]*waiter{}, clean: map[string]bool{}, queue: map[string][]*store.KeyValue{},
			from: s.Store.Revision() + 1}
	})
	return s.hub
}

// nodeSignal is closed at the next Pending command of the node.
func (h *hub) nodeSignal(node string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.nodes[node]
	if !ok {
		ch = make(chan struct{})
		h.nodes[node] = ch
	}
	return ch
}

// commandSignal registers a waiter for the command's changes; every call
// must be matched by forget.
func (h *hub) commandSignal(id string) *waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.cmds[id]
	if !ok {
		w = &waiter{ch: make(chan struct{})}
		h.cmds[id] = w
	}
	w.n++
	return w
}

// current is the waiter's channel, closed at the next change, and the
// latest change seen (nil when none, or after the watch lost its place).
func (h *hub) current(w *waiter) (<-chan struct{}, *store.KeyValue) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.ch, w.kv
}

func (h *hub) forget(id string, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.n--; w.n <= 0 && h.cmds[id] == w {
		delete(h.cmds, id)
	}
}

// mayHavePending reports whether a poll must look at the store, and marks
// the node clean for the look it is about to take (which covers whatever
// the queue held).
func (h *hub) mayHavePending(node string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.clean[node]
	if !was {
		h.clean[node] = true
		delete(h.queue, node)
	}
	return !was
}

// popQueue takes up to max queued Pending changes of a clean node.
func (h *hub) popQueue(node string, limit int) []*store.KeyValue {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queue[node]
	n := min(limit, len(q))
	out := append([]*store.KeyValue(nil), q[:n]...)
	if n == len(q) {
		delete(h.queue, node)
	} else {
		h.queue[node] = q[n:]
	}
	return out
}

// queuePut adds a Pending change, replacing an older one of the same key.
func queuePut(q []*store.KeyValue, kv *store.KeyValue) []*store.KeyValue {
	for i, e := range q {
		if e.Key == kv.Key {
			q[i] = kv
			return q
		}
	}
	return append(q, kv)
}

// unsure forgets that a node is clean (a claim left commands behind).
func (h *hub) unsure(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clean, node)
	delete(h.queue, node)
}

func (h *hub) wake(node, id string, pending bool, kv *store.KeyValue) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch q := h.queue[node]; {
	case pending && h.clean[node] && len(q) < queueLimit:
		h.queue[node] = queuePut(q, kv)
	case pending:
		delete(h.clean, node)
		delete(h.queue, node)
	case len(q) > 0:
		// Handed out (or ended) meanwhile: no longer to claim.
		kept := q[:0]
		for _, e := range q {
			if e.Key != kv.Key {
				kept = append(kept, e)
			}
		}
		h.queue[node] = kept
	}
	if ch, ok := h.nodes[node]; ok && pending {
		close(ch)
		delete(h.nodes, node)
	}
	if w, ok := h.cmds[id]; ok {
		w.kv = kv
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

// wakeAll is used after the watch lost its place: every waiter looks again.
func (h *hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clean = map[string]bool{}
	h.queue = map[string][]*store.KeyValue{}
	for n, ch := range h.nodes {
		close(ch)
		delete(h.nodes, n)
	}
	for _, w := range h.cmds {
		w.kv = nil
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

// Run follows the command records until ctx ends, waking long polls and
// waits. It starts from the revision current when the hub was made:
// whoever waits looks at the state first, so nothing before that matters,
// and nothing after it is missed when a poll came before Run started.
func (s *Service) Run(ctx context.Context) {
	h := s.h()
	from := h.from
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		for resp := range s.Store.Watch(wctx, Prefix, from) {
			if resp.Err != nil {
				from = s.Store.Revision() + 1
				h.wakeAll()
				break
			}
			for _, ev := range resp.Events {
				from = ev.KV.ModRevision + 1
				if ev.Type != store.EventPut {
					continue
				}
				var head struct {
					CommandID string `json:"commandId"`
					NodeID    string `json:"nodeId"`
					Status    string `json:"status"`
				}
				if json.Unmarshal(ev.KV.Value, &head) == nil {
					h.wake(head.NodeID, head.CommandID, head.Status == Pending, ev.KV)
				}
			}
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	h.wakeAll()
}
