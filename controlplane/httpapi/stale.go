package httpapi

import (
	"time"

	"github.com/gin-gonic/gin"
)

// StaleHeader marks an answer given by a node that has lost contact with
// the cluster leader: it comes from this node's own state and may lack
// changes made through other nodes since (contract header SvcStale).
const StaleHeader = "X-Svc-Stale"

// StaleAfter is how long a follower may go without hearing from the leader
// before its answers are marked stale; the leader sends heartbeats many
// times a second.
const StaleAfter = 2 * time.Second

// staleMark sets StaleHeader on every answer while inContact(StaleAfter)
// is false.
func staleMark(inContact func(maxAge time.Duration) bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if inContact != nil && !inContact(StaleAfter) {
			c.Header(StaleHeader, "true")
		}
		c.Next()
	}
}
