package gb28181

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
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

// credentials is a parsed Authorization header (RFC 2617 3.2.2).
type credentials struct {
	username, realm, nonce, uri, response, algorithm, qop, nc, cnonce string
}

// parseAuthorization reads a Digest Authorization header value.
func parseAuthorization(v string) (credentials, error) {
	v = strings.TrimSpace(v)
	if len(v) < 7 || !strings.EqualFold(v[:7], "digest ") {
		return credentials{}, fmt.Errorf("the Authorization is not Digest")
	}
	var c credentials
	for _, part := range splitParams(v[7:]) {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		val = strings.Trim(strings.TrimSpace(val), `"`)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "username":
			c.username = val
		case "realm":
			c.realm = val
		case "nonce":
			c.nonce = val
		case "uri":
			c.uri = val
		case "response":
			c.response = val
		case "algorithm":
			c.algorithm = val
		case "qop":
			c.qop = val
		case "nc":
			c.nc = val
		case "cnonce":
			c.cnonce = val
		}
	}
	if c.username == "" || c.nonce == "" || c.uri == "" || c.response == "" {
		return credentials{}, fmt.Errorf("the Authorization lacks username, nonce, uri or response")
	}
	if c.algorithm != "" && !strings.EqualFold(c.algorithm, "MD5") {
		return credentials{}, fmt.Errorf("digest algorithm %q is not MD5", c.algorithm)
	}
	return c, nil
}

// splitParams splits at commas outside quotes.
func splitParams(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// valid checks the response against the password (RFC 2617 3.2.2.1).
func (c credentials) valid(method, password string) bool {
	ha1 := md5hex(c.username + ":" + c.realm + ":" + password)
	ha2 := md5hex(method + ":" + c.uri)
	want := md5hex(ha1 + ":" + c.nonce + ":" + ha2)
	if c.qop != "" {
		want = md5hex(ha1 + ":" + c.nonce + ":" + c.nc + ":" + c.cnonce + ":" + c.qop + ":" + ha2)
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(c.response))) == 1
}
