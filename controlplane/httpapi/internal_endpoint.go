package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// Internal entry points are not part of the published contract. They are
// authenticated with an HMAC over timestamp, method, path and body under a
// key derived from the cluster keyring, which only control nodes hold.
const (
	internalTimestampHeader = "X-Svc-Internal-Timestamp"
	internalSignatureHeader = "X-Svc-Internal-Signature"
	internalWindow          = 60 * time.Second
	JoinPath                = "/internal/v1/cluster/join"
	RemovePath              = "/internal/v1/cluster/remove"
)

// SignInternal returns the signature headers for an internal request.
func SignInternal(key []byte, method, path string, body []byte, now time.Time) (ts, sig string) {
	ts = strconv.FormatInt(now.Unix(), 10)
	return ts, "v1=" + internalMAC(key, ts, method, path, body)
}

func internalMAC(key []byte, ts, method, path string, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%s.%s.", ts, method, path)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func internalAuth(keys [][]byte, maxBody int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
		if err != nil {
			abortWithError(c, newError(http.StatusRequestEntityTooLarge, "payload_too_large", "body too large"))
			return
		}
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
		ts := c.GetHeader(internalTimestampHeader)
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(sec, 0)).Abs() > internalWindow {
			abortWithError(c, newError(http.StatusUnauthorized, "authentication_required", "internal request without a fresh timestamp"))
			return
		}
		got := []byte(c.GetHeader(internalSignatureHeader))
		for _, k := range keys {
			if hmac.Equal(got, []byte("v1="+internalMAC(k, ts, c.Request.Method, c.Request.URL.Path, body))) {
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
