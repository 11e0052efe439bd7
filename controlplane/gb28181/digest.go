package gb28181

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// maxNonces bounds the outstanding challenges a node keeps; beyond it the
// oldest are forgotten (their devices are challenged again).
const maxNonces = 100_000

// nonces are the digest challenges a node has issued. A nonce answers one
// REGISTER (its nonce count must rise for another), so a captured
// Authorization header cannot be replayed; an expired or unknown nonce is
// answered with a fresh challenge marked stale.
type nonces struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*nonceState
	// order is the issue order, for evicting the oldest.
	order []string
}

type nonceState struct {
	issued time.Time
	lastNC uint64
	used   bool
}

func newNonces(ttl time.Duration) *nonces { return &nonces{ttl: ttl, m: map[string]*nonceState{}} }

func (n *nonces) issue(now time.Time) string {
	var b [16]byte
	rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.order) >= maxNonces || (len(n.order) > 0 && len(n.order)%1024 == 0) {
		n.evict(now)
	}
	n.m[nonce] = &nonceState{issued: now}
	n.order = append(n.order, nonce)
	return nonce
}

// evict drops expired nonces, then the oldest half while over the bound.
func (n *nonces) evict(now time.Time) {
	keep := n.order[:0]
	for _, id := range n.order {
		if st := n.m[id]; st != nil && now.Sub(st.issued) <= n.ttl {
			keep = append(keep, id)
		} else {
			delete(n.m, id)
		}
	}
	n.order = keep
	if len(n.order) >= maxNonces {
		drop := len(n.order) / 2
		for _, id := range n.order[:drop] {
			delete(n.m, id)
		}
		n.order = append(n.order[:0], n.order[drop:]...)
	}
}

// nonceVerdict is what a nonce check found.
type nonceVerdict int

const (
	nonceOK nonceVerdict = iota
	nonceStale
	nonceReplayed
)

// use accepts a nonce once per nonce count.
func (n *nonces) use(nonce string, nc uint64, now time.Time) nonceVerdict {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.m[nonce]
	if st == nil || now.Sub(st.issued) > n.ttl {
		return nonceStale
	}
	if st.used && nc <= st.lastNC {
		return nonceReplayed
	}
	st.used, st.lastNC = true, nc
	return nonceOK
}
