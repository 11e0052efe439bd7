// Package events owns the event outbox: every standard event of contract A
// ("Events") is written to the store in the same transaction as the state
// change that caused it, with the envelope exactly as the contract tables
// it. Delivery (webhook plans, the dispatcher) and the runtime-state
// WebSocket read from here.
package events

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
)

// OutboxPrefix holds one entry per event; keys are UUIDv7 event ids, so key
// order is time order.
const OutboxPrefix = "/events/outbox/"

// SchemaVersion is the envelope's parsing version.
const SchemaVersion = 1

// Source values of the envelope (contract A, "Event envelope").
type Source string

const (
	SourceGB28181     Source = "gb28181"
	SourceRTC         Source = "rtc"
	SourceMedia       Source = "media"
	SourceRecording   Source = "recording"
	SourceEngine      Source = "engine"
	SourceWebhookTest Source = "outbound-webhook-test"
)

// Standard event names (contract A, "Standard event catalog"). Append-only.
const (
	MediaServerStarted     = "media.server.started"
	MediaServerStopped     = "media.server.stopped"
	MediaServerCrashed     = "media.server.crashed"
	MediaServerStartFailed = "media.server.start_failed"
	MediaServerRecovered   = "media.server.recovered"
	MediaStreamOnline      = "media.stream.online"
	MediaStreamOffline     = "media.stream.offline"
	RecordingFileCompleted = "recording.file.completed"
	SystemWebhookTest      = "system.webhook.test"
	// EngineWebhookPrefix + HookName names a raw engine hook event.
	EngineWebhookPrefix = "engine.webhook."
)

// Envelope is the body of every delivery. Data keeps the contract's exact
// field capitalisation, so callers pass a map or a struct with explicit
// json tags.
type Envelope struct {
	SchemaVersion int             `json:"schemaVersion"`
	EventID       string          `json:"eventId"`
	EventName     string          `json:"eventName"`
	OccurredAtUTC time.Time       `json:"occurredAtUtc"`
	Source        Source          `json:"source"`
	NodeID        string          `json:"nodeId"`
	Data          json.RawMessage `json:"data"`
}

// New builds an envelope with a fresh UUIDv7 event id. nodeID is the
// originating control node, not a media server.
func New(name string, source Source, nodeID string, data any) (Envelope, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Envelope{}, err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Envelope{}, fmt.Errorf("event %s: %w", name, err)
	}
	return Envelope{SchemaVersion: SchemaVersion, EventID: id.String(), EventName: name,
		OccurredAtUTC: time.Now().UTC(), Source: source, NodeID: nodeID, Data: raw}, nil
}

// Op returns the store operation that appends ev to the outbox; put it in
// the same Txn as the change the event describes.
func Op(ev Envelope) (store.Op, error) {
	if ev.EventID == "" || ev.EventName == "" {
		return store.Op{}, fmt.Errorf("event without id or name")
	}
	val, err := json.Marshal(ev)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(OutboxPrefix+ev.EventID, val), nil
}
