package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// Internal entry points are not part of the published contract. They are
// authenticated with an HMAC under a key derived from the cluster keyring,
// which only control nodes hold. The MAC covers a timestamp, a random nonce,
// the method, the target host, the path and the body: a captured request
// cannot be sent to another member, and each member refuses a nonce it has
// already seen within the time window.
const (
	internalTimestampHeader = "X-Svc-Internal-Timestamp"
	internalNonceHeader     = "X-Svc-Internal-Nonce"
	internalSignatureHeader = "X-Svc-Internal-Signature"
	internalWindow          = 60 * time.Second
	JoinPath                = "/internal/v1/cluster/join"
	RemovePath              = "/internal/v1/cluster/remove"
)

// SignInternal returns the headers that authenticate an internal request
// to host (the member's host:port as it appears in the request URL).
func SignInternal(key []byte, method, host, path string, body []byte, now time.Time) http.Header {
	var nb [16]byte
	rand.Read(nb[:])
	ts, nonce := strconv.FormatInt(now.Unix(), 10), hex.EncodeToString(nb[:])
	h := http.Header{}
	h.Set(internalTimestampHeader, ts)
	h.Set(internalNonceHeader, nonce)
	h.Set(internalSignatureHeader, "v1="+internalMAC(key, ts, nonce, method, host, path, body))
	return h
}

func internalMAC(key []byte, ts, nonce, method, host, path string, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%s.%s.%s.%s.", ts, nonce, method, strings.ToLower(host), path)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// nonceCache remembers the nonces of the time window.
type nonceCache struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (n *nonceCache) fresh(nonce string, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, t := range n.seen {
		if now.Sub(t) > 2*internalWindow {
			delete(n.seen, k)
		}
	}
	if _, dup := n.seen[nonce]; dup {
		return false
	}
	n.seen[nonce] = now
	return true
}

func internalAuth(keys [][]byte, maxBody int64) gin.HandlerFunc {
	nonces := &nonceCache{seen: map[string]time.Time{}}
	return func(c *gin.Context) {
		body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
		if err != nil {
			abortWithError(c, newError(http.StatusRequestEntityTooLarge, "payload_too_large", "body too large"))
			return
		}
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
		ts, nonce := c.GetHeader(internalTimestampHeader), c.GetHeader(internalNonceHeader)
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(sec, 0)).Abs() > internalWindow || len(nonce) != 32 {
			abortWithError(c, newError(http.StatusUnauthorized, "authentication_required", "internal request without a fresh timestamp and nonce"))
			return
		}
		got := []byte(c.GetHeader(internalSignatureHeader))
		for _, k := range keys {
			if hmac.Equal(got, []byte("v1="+internalMAC(k, ts, nonce, c.Request.Method, c.Request.Host, c.Request.URL.Path, body))) {
				if !nonces.fresh(nonce, time.Now()) {
					abortWithError(c, newError(http.StatusUnauthorized, "authentication_required", "internal request replayed"))
					return
				}
				c.Next()
				return
			}
		}
		abortWithError(c, newError(http.StatusUnauthorized, "authentication_required", "internal request signature does not verify"))
	}
}

func joinHandler(node *raftnode.Node) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req raftnode.JoinRequest
		dec := json.NewDecoder(c.Request.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			abortWithError(c, newError(http.StatusBadRequest, "invalid_body", "join request: "+err.Error()))
			return
		}
		if err := node.Join(c.Request.Context(), req); err != nil {
			abortWithError(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"nodeId": req.NodeID, "joined": true})
	}
}

func removeHandler(node *raftnode.Node) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req struct {
			NodeID string `json:"nodeId"`
		}
		dec := json.NewDecoder(c.Request.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || !raftnode.NodeIDPattern.MatchString(req.NodeID) {
			abortWithError(c, newError(http.StatusBadRequest, "invalid_body", "remove request needs a valid nodeId"))
			return
		}
		if err := node.Remove(c.Request.Context(), req.NodeID); err != nil {
			abortWithError(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"nodeId": req.NodeID, "removed": true})
	}
}
