// Package clusterlink authenticates requests between the control nodes of
// one cluster (joins, removals, forwarded heartbeats, relayed device
// commands). Such a request carries an HMAC under a key derived from the
// cluster keyring, which only control nodes hold. The MAC covers a
// timestamp, a random nonce, the method, the target host, the path and the
// body: a captured request cannot be sent to another member, and each
// member refuses a nonce it has already seen within the time window.
package clusterlink

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
)

// The headers of a signed request.
const (
	TimestampHeader = "X-Svc-Internal-Timestamp"
	NonceHeader     = "X-Svc-Internal-Nonce"
	SignatureHeader = "X-Svc-Internal-Signature"
)

// Window is how far a request's timestamp may be from the receiver's
// clock; a nonce is remembered for twice as long.
const Window = 60 * time.Second

// Why a request is refused.
var (
	ErrStale     = fault.New(fault.Unauthenticated, "authentication_required", "internal request without a fresh timestamp and nonce")
	ErrReplayed  = fault.New(fault.Unauthenticated, "authentication_required", "internal request replayed")
	ErrSignature = fault.New(fault.Unauthenticated, "authentication_required", "internal request signature does not verify")
)

// Sign returns the headers that authenticate a request to host (the
// member's host:port as it appears in the request URL).
func Sign(key []byte, method, host, path string, body []byte, now time.Time) http.Header {
	var nb [16]byte
	rand.Read(nb[:])
	ts, nonce := strconv.FormatInt(now.Unix(), 10), hex.EncodeToString(nb[:])
	h := http.Header{}
	h.Set(TimestampHeader, ts)
	h.Set(NonceHeader, nonce)
	h.Set(SignatureHeader, "v1="+mac(key, ts, nonce, method, host, path, body))
	return h
}

func mac(key []byte, ts, nonce, method, host, path string, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%s.%s.%s.%s.", ts, nonce, method, strings.ToLower(host), path)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verifier checks signed requests against the link keys (the current one
// and those still accepted after a rotation) and remembers their nonces.
type Verifier struct {
	keys [][]byte
	mu   sync.Mutex
	seen map[string]time.Time
}

// NewVerifier checks requests against keys.
func NewVerifier(keys [][]byte) *Verifier {
	return &Verifier{keys: keys, seen: map[string]time.Time{}}
}

// Check verifies a request's headers over its method, host, path and body
// at now, and takes its nonce.
func (v *Verifier) Check(h http.Header, method, host, path string, body []byte, now time.Time) error {
	ts, nonce := h.Get(TimestampHeader), h.Get(NonceHeader)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > Window || len(nonce) != 32 {
		return ErrStale
	}
	got := []byte(h.Get(SignatureHeader))
	for _, k := range v.keys {
		if hmac.Equal(got, []byte("v1="+mac(k, ts, nonce, method, host, path, body))) {
			if !v.fresh(nonce, now) {
				return ErrReplayed
			}
			return nil
		}
	}
	return ErrSignature
}

// fresh takes a nonce unless it was seen within the window.
func (v *Verifier) fresh(nonce string, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, t := range v.seen {
		if now.Sub(t) > 2*Window {
			delete(v.seen, k)
		}
	}
	if _, dup := v.seen[nonce]; dup {
		return false
	}
	v.seen[nonce] = now
	return true
}
