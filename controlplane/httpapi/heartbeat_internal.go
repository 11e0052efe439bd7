package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/pki"
)

// HeartbeatPath is where a control node passes a heartbeat it received to
// the others, so every control node holds every node's figures.
const HeartbeatPath = "/internal/v1/nodes/heartbeat"

// ForwardedHeartbeat is the body of HeartbeatPath.
type ForwardedHeartbeat struct {
	NodeID     string             `json:"nodeId"`
	ReceivedAt time.Time          `json:"receivedAt"`
	Heartbeat  agentapi.Heartbeat `json:"heartbeat"`
}

func heartbeatHandler(p *nodes.Presence) gin.HandlerFunc {
	return func(c *gin.Context) {
		var f ForwardedHeartbeat
		dec := json.NewDecoder(c.Request.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil || !pki.NodeIDPattern.MatchString(f.NodeID) || f.ReceivedAt.IsZero() {
			abortWithError(c, newError(http.StatusBadRequest, "invalid_body", "a forwarded heartbeat needs nodeId, receivedAt and heartbeat"))
			return
		}
		// A clock far ahead of ours must not keep a node alive.
		if f.ReceivedAt.After(time.Now().Add(5 * time.Second)) {
			f.ReceivedAt = time.Now()
		}
		p.Record(f.NodeID, f.Heartbeat, f.ReceivedAt.UTC())
		c.JSON(http.StatusOK, gin.H{"recorded": true})
	}
}
