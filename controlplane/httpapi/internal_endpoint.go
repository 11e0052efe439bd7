package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/controlplane/clusterlink"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// Internal entry points are not part of the published contract; they are
// authenticated by controlplane/clusterlink.
const (
	JoinPath   = "/internal/v1/cluster/join"
	RemovePath = "/internal/v1/cluster/remove"
)

// internalAuth refuses internal requests that clusterlink does not verify.
func internalAuth(keys [][]byte, maxBody int64) gin.HandlerFunc {
	link := clusterlink.NewVerifier(keys)
	return func(c *gin.Context) {
		body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxBody))
		if err != nil {
			abortWithError(c, newError(http.StatusRequestEntityTooLarge, "payload_too_large", "body too large"))
			return
		}
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
		if err := link.Check(c.Request.Header, c.Request.Method, c.Request.Host, c.Request.URL.Path, body, time.Now()); err != nil {
			abortWithError(c, err)
			return
		}
		c.Next()
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
