package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// OutboxIndex is the typed index of the outbox; the listing, the webhook
// inbox (the engine.webhook events, filtered by media server) and the
// dispatcher's retention query use it.
var OutboxIndex = query.Index{Name: "event_outbox", Prefix: OutboxPrefix, Columns: []query.Column{
	{Name: "event_name", Type: "TEXT", Path: "$.eventName"},
	{Name: "source", Type: "TEXT", Path: "$.source"},
	{Name: "target", Type: "TEXT", Path: "$.targetSubscriptionId"},
	{Name: "media_server_id", Type: "TEXT", Path: "$.data.MediaServerId"},
}}

// Entry is an outbox record: the envelope exactly as it is delivered, plus
// what only the dispatcher reads.
type Entry struct {
	Envelope
	// TargetSubscriptionID marks an operator's test event for one delivery
	// plan: its delivery is created with it, so the fan-out skips it.
	TargetSubscriptionID string `json:"targetSubscriptionId,omitempty"`
	// ReceivedHookName is, on an engine.webhook event, the hook's name as
	// the engine sent it (on_stream_changed); the webhook inbox shows it.
	ReceivedHookName string `json:"receivedHookName,omitempty"`
}

// EntryOp is Op for an entry with dispatcher fields.
func EntryOp(e Entry) (store.Op, error) {
	if e.EventID == "" || e.EventName == "" {
		return store.Op{}, fmt.Errorf("event without id or name")
	}
	val, err := json.Marshal(e)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(OutboxPrefix+e.EventID, val), nil
}

// DecodeEntry parses a stored outbox value.
func DecodeEntry(raw []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Entry{}, fmt.Errorf("outbox entry: %w", err)
	}
	return e, nil
}

// Get reads one outbox entry.
func Get(ctx context.Context, s store.Store, eventID string) (Entry, error) {
	kv, _, err := store.Get(ctx, s, OutboxPrefix+eventID, store.Local)
	if err != nil {
		return Entry{}, err
	}
	if kv == nil {
		return Entry{}, fmt.Errorf("%w: %s", ErrNotFound, eventID)
	}
	return DecodeEntry(kv.Value)
}

// ListOutbox returns one page of the outbox, newest first (keys are UUIDv7,
// so key order is time order), and the total number of entries.
func ListOutbox(ctx context.Context, r query.Reader, page, size int) ([]Entry, int64, error) {
	return query.Page(ctx, r, query.Query{Index: OutboxIndex.Name, Order: []query.Order{query.Desc(query.Key)}}, page, size, query.JSON[Entry])
}

// KeyBefore is the smallest key under prefix of a UUIDv7 record created at
// t (millisecond precision): every key sorting before it is older.
func KeyBefore(prefix string, t time.Time) string {
	ms := uint64(t.UnixMilli())
	return fmt.Sprintf("%s%08x-%04x", prefix, ms>>16, ms&0xffff)
}
