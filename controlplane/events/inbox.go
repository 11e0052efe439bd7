package events

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// InboxPrefix holds one record per engine hook received; the key is the id
// of the engine.webhook event written with it, so key order is time order.
const InboxPrefix = "/events/webhook-inbox/"

// MaxHookBody bounds one hook body; the engine's largest hooks (flow
// reports) are a few kilobytes.
const MaxHookBody = 64 << 10

// InboxIndex is the typed index of the webhook inbox.
var InboxIndex = sqlitefsm.IndexSpec{Name: "webhook_inbox", Prefix: InboxPrefix, Columns: []sqlitefsm.IndexColumn{
	{Name: "hook_name", Type: "TEXT", Path: "$.hookName"},
	{Name: "media_server_id", Type: "TEXT", Path: "$.mediaServerId"},
}}

// InboxEntry is one engine hook as it arrived.
type InboxEntry struct {
	// ID is also the eventId of the engine.webhook event it became.
	ID string `json:"id"`
	// HookName is the catalog form (OnStreamChanged); ReceivedHookName is
	// what the engine called it (on_stream_changed).
	HookName         string    `json:"hookName"`
	ReceivedHookName string    `json:"receivedHookName"`
	MediaServerID    string    `json:"mediaServerId"`
	App              *string   `json:"app"`
	Stream           *string   `json:"stream"`
	ReceivedAt       time.Time `json:"receivedAt"`
	RawJSON          string    `json:"rawJson"`
}

// EngineHookData is the `data` of an engine.webhook.<HookName> event, with
// the contract's capitalisation.
type EngineHookData struct {
	HookName      string  `json:"HookName"`
	MediaServerID *string `json:"MediaServerId"`
	App           *string `json:"App"`
	Stream        *string `json:"Stream"`
	RawJSON       string  `json:"RawJson"`
	ReceivedAt    string  `json:"ReceivedAt"`
}

// offsetLayout writes ReceivedAt as an offset timestamp (+00:00), which
// the contract distinguishes from the UTC `Z` form of occurredAtUtc.
const offsetLayout = "2006-01-02T15:04:05.999999999-07:00"

var mediaServerRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Service writes the events that originate in the control plane's own
// inputs (engine hooks) and reads the outbox and the inbox.
type Service struct {
	Store  store.Store
	Reader sqlitefsm.Reader
	// NodeID is this control node, the envelope's nodeId.
	NodeID string
	Clock  Clock
}

func (s *Service) now() time.Time {
	if s.Clock == nil {
		return time.Now().UTC()
	}
	return s.Clock.Now().UTC()
}

// ReceiveEngineHook stores an engine hook in the webhook inbox and writes
// its engine.webhook.<HookName> event in the same Txn, so neither exists
// without the other. raw must be a JSON object of at most MaxHookBody
// bytes; it is kept byte for byte as the event's RawJson.
func (s *Service) ReceiveEngineHook(ctx context.Context, hookName, mediaServerID string, raw []byte) (InboxEntry, error) {
	in, ops, err := s.EngineHookOps(hookName, mediaServerID, raw)
	if err != nil {
		return InboxEntry{}, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		return InboxEntry{}, fmt.Errorf("storing hook %s: %w", in.HookName, err)
	}
	return in, nil
}

// EngineHookOps validates an engine hook and returns its inbox entry with
// the store operations that write the entry and its event; a caller that
// receives many hooks commits several of them in one Txn.
func (s *Service) EngineHookOps(hookName, mediaServerID string, raw []byte) (InboxEntry, []store.Op, error) {
	hook, err := NormalizeHookName(hookName)
	if err != nil {
		return InboxEntry{}, nil, err
	}
	if !mediaServerRe.MatchString(mediaServerID) {
		return InboxEntry{}, nil, fmt.Errorf("%w: media server id %q", ErrInvalid, mediaServerID)
	}
	if len(raw) > MaxHookBody {
		return InboxEntry{}, nil, fmt.Errorf("%w: hook body of %d bytes exceeds %d", ErrInvalid, len(raw), MaxHookBody)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return InboxEntry{}, nil, fmt.Errorf("%w: hook body must be a JSON object", ErrInvalid)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return InboxEntry{}, nil, err
	}
	now := s.now()
	in := InboxEntry{ID: id.String(), HookName: hook, ReceivedHookName: hookName, MediaServerID: mediaServerID,
		App: stringField(fields, "app"), Stream: stringField(fields, "stream"), ReceivedAt: now, RawJSON: string(bytes.TrimSpace(raw))}
	data := EngineHookData{HookName: hook, MediaServerID: &in.MediaServerID, App: in.App, Stream: in.Stream,
		RawJSON: in.RawJSON, ReceivedAt: now.Format(offsetLayout)}
	ev, err := New(EngineWebhookPrefix+hook, SourceEngine, s.NodeID, data)
	if err != nil {
		return InboxEntry{}, nil, err
	}
	ev.EventID, ev.OccurredAtUTC = in.ID, now
	evOp, err := Op(ev)
	if err != nil {
		return InboxEntry{}, nil, err
	}
	val, err := json.Marshal(in)
	if err != nil {
		return InboxEntry{}, nil, err
	}
	return in, []store.Op{store.Put(InboxPrefix+in.ID, val), evOp}, nil
}

// stringField returns a top-level string property, or nil.
func stringField(fields map[string]json.RawMessage, name string) *string {
	var v string
	if raw, ok := fields[name]; ok && json.Unmarshal(raw, &v) == nil {
		return &v
	}
	return nil
}

// InboxQuery filters the inbox listing; empty fields do not filter.
type InboxQuery struct {
	HookName, MediaServerID string
	Page, PageSize          int
}

// ListInbox returns one page of received hooks, newest first.
func (s *Service) ListInbox(ctx context.Context, q InboxQuery) ([]InboxEntry, int64, error) {
	var where []string
	var args []any
	if q.HookName != "" {
		hook, err := NormalizeHookName(q.HookName)
		if err != nil {
			return nil, 0, err
		}
		where, args = append(where, "i.hook_name = ?"), append(args, hook)
	}
	if q.MediaServerID != "" {
		where, args = append(where, "i.media_server_id = ?"), append(args, q.MediaServerID)
	}
	return sqlitefsm.IndexPage[InboxEntry](ctx, s.Reader, InboxIndex.Table(), where, args, "i.key DESC", q.Page, q.PageSize)
}

// PruneInbox removes inbox entries received before cutoff and the oldest
// ones beyond maxEntries, at most batch per call, and returns how many it
// removed. Entries are independent of delivery: the event keeps RawJson.
func (s *Service) PruneInbox(ctx context.Context, cutoff time.Time, maxEntries, batch int) (int64, error) {
	return PruneOldest(ctx, s.Store, s.Reader, InboxIndex, KeyBefore(InboxPrefix, cutoff), maxEntries, batch)
}

// PruneOldest deletes, in one range delete, the oldest keys of an index
// whose keys are UUIDv7 (time order): those before cutoffKey and those
// beyond the newest maxEntries, at most batch of them.
func PruneOldest(ctx context.Context, s store.Store, r sqlitefsm.Reader, spec sqlitefsm.IndexSpec, cutoffKey string, maxEntries, batch int) (int64, error) {
	var total, old int64
	var end string
	err := r.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+spec.Table()).Scan(&total); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+spec.Table()+" WHERE key < ?", cutoffKey).Scan(&old); err != nil {
			return err
		}
		n := max(old, total-int64(maxEntries))
		n = min(n, int64(batch))
		if n <= 0 {
			return nil
		}
		// The range end is the first key that stays.
		err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT key FROM %s ORDER BY key LIMIT 1 OFFSET %d", spec.Table(), n)).Scan(&end)
		if err == sql.ErrNoRows {
			end = store.PrefixEnd(spec.Prefix)
			return nil
		}
		return err
	})
	if err != nil || end == "" {
		return 0, err
	}
	resp, err := s.Txn(ctx, store.TxnRequest{Then: []store.Op{{Type: store.OpDelete, Key: spec.Prefix, End: end}}})
	if err != nil {
		return 0, err
	}
	if len(resp.Responses) == 0 {
		return 0, nil
	}
	return resp.Responses[0].Deleted, nil
}

// KeyBefore is the smallest key under prefix of a UUIDv7 record created at
// t (millisecond precision): every key sorting before it is older.
func KeyBefore(prefix string, t time.Time) string {
	ms := uint64(t.UnixMilli())
	return fmt.Sprintf("%s%08x-%04x", prefix, ms>>16, ms&0xffff)
}
