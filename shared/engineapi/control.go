package engineapi

import "time"

// Control API paths on the engine's loopback ControlAddr. Every call carries
// Authorization: Bearer <control secret>; answers are JSON, errors are
// {"code": "...", "message": "..."} with a 4xx/5xx status.
const (
	// PathHealth answers 200 with Health once the engine serves media.
	PathHealth = "/api/v1/health"
	// PathReload re-reads the configuration file (POST); settings that need
	// a restart are reported in the answer, not applied.
	PathReload = "/api/v1/reload"
)

// Health is the engine's answer on PathHealth; the agent's supervisor uses
// it to tell a started engine from one that is merely running.
type Health struct {
	Status        string    `json:"status"` // "ok"
	PID           int       `json:"pid"`
	Version       string    `json:"version"`
	MediaServerID string    `json:"mediaServerId"`
	StartedAt     time.Time `json:"startedAt"`
	Streams       int       `json:"streams"`
	Players       int       `json:"players"`
}
