package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/shared/engineapi"
)

// LegacyInboxPrefix held a copy of every engine hook before the inbox
// became a view of the engine.webhook events; the retention task removes
// what an older version left there.
const LegacyInboxPrefix = "/events/webhook-inbox/"

// MaxHookBody bounds one hook body; the engine's largest hooks (flow
// reports) are a few kilobytes.
const MaxHookBody = 64 << 10

// InboxEntry is one engine hook as it arrived: the webhook inbox shows
// the engine.webhook events of the outbox in this form.
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
	Reader query.Reader
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

// ReceiveEngineHook stores an engine hook as its engine.webhook.<HookName>
// event, which is also its webhook inbox entry. raw must be a JSON object
// of at most MaxHookBody bytes; it is kept byte for byte as RawJson.
func (s *Service) ReceiveEngineHook(ctx context.Context, hookName, mediaServerID string, raw []byte) (InboxEntry, error) {
	in, op, err := s.EngineHookOp(hookName, mediaServerID, raw)
	if err != nil {
		return InboxEntry{}, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
		return InboxEntry{}, fmt.Errorf("storing hook %s: %w", in.HookName, err)
	}
	return in, nil
}

// EngineHookOp validates an engine hook and returns its inbox entry with
// the store operation that writes its event; a caller that receives many
// hooks commits several of them in one Txn.
func (s *Service) EngineHookOp(hookName, mediaServerID string, raw []byte) (InboxEntry, store.Op, error) {
	hook, err := NormalizeHookName(hookName)
	if err != nil {
		return InboxEntry{}, store.Op{}, err
	}
	if !mediaServerRe.MatchString(mediaServerID) {
		return InboxEntry{}, store.Op{}, fmt.Errorf("%w: media server id %q", ErrInvalid, mediaServerID)
	}
	if len(raw) > MaxHookBody {
		return InboxEntry{}, store.Op{}, fmt.Errorf("%w: hook body of %d bytes exceeds %d", ErrInvalid, len(raw), MaxHookBody)
	}
	var fields struct {
		App    json.RawMessage `json:"app"`
		Stream json.RawMessage `json:"stream"`
	}
	if !engineapi.OpensObject(raw) || json.Unmarshal(raw, &fields) != nil {
		return InboxEntry{}, store.Op{}, fmt.Errorf("%w: hook body must be a JSON object", ErrInvalid)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return InboxEntry{}, store.Op{}, err
	}
	now := s.now()
	in := InboxEntry{ID: id.String(), HookName: hook, ReceivedHookName: hookName, MediaServerID: mediaServerID,
		App: stringField(fields.App), Stream: stringField(fields.Stream), ReceivedAt: now, RawJSON: string(bytes.TrimSpace(raw))}
	data := EngineHookData{HookName: hook, MediaServerID: &in.MediaServerID, App: in.App, Stream: in.Stream,
		RawJSON: in.RawJSON, ReceivedAt: now.Format(offsetLayout)}
	ev, err := New(EngineWebhookPrefix+hook, SourceEngine, s.NodeID, data)
	if err != nil {
		return InboxEntry{}, store.Op{}, err
	}
	ev.EventID, ev.OccurredAtUTC = in.ID, now
	op, err := EntryOp(Entry{Envelope: ev, ReceivedHookName: hookName})
	if err != nil {
		return InboxEntry{}, store.Op{}, err
	}
	return in, op, nil
}

// stringField returns a property that is a string, or nil.
func stringField(raw json.RawMessage) *string {
	var v string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &v) == nil {
		return &v
	}
	return nil
}

// InboxQuery filters the inbox listing; empty fields do not filter.
type InboxQuery struct {
	HookName, MediaServerID string
	Page, PageSize          int
}

// ListInbox returns one page of received hooks, newest first: the
// engine.webhook events of the outbox, kept as long as its retention keeps
// them.
func (s *Service) ListInbox(ctx context.Context, q InboxQuery) ([]InboxEntry, int64, error) {
	where := query.Where{query.Ge("event_name", EngineWebhookPrefix), query.Lt("event_name", store.PrefixEnd(EngineWebhookPrefix))}
	if q.HookName != "" {
		hook, err := NormalizeHookName(q.HookName)
		if err != nil {
			return nil, 0, err
		}
		where = query.Where{query.Eq("event_name", EngineWebhookPrefix+hook)}
	}
	where.EqIfSet("media_server_id", q.MediaServerID)
	entries, total, err := query.Page(ctx, s.Reader, query.Query{Index: OutboxIndex.Name, Where: where, Order: []query.Order{query.Desc(query.Key)}},
		q.Page, q.PageSize, query.JSON[Entry])
	if err != nil {
		return nil, 0, err
	}
	out := make([]InboxEntry, 0, len(entries))
	for _, e := range entries {
		in, err := inboxEntry(e)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, in)
	}
	return out, total, nil
}

// inboxEntry is the inbox form of an engine.webhook event.
func inboxEntry(e Entry) (InboxEntry, error) {
	var d EngineHookData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return InboxEntry{}, fmt.Errorf("engine hook event %s: %w", e.EventID, err)
	}
	in := InboxEntry{ID: e.EventID, HookName: d.HookName, ReceivedHookName: e.ReceivedHookName, App: d.App, Stream: d.Stream,
		ReceivedAt: e.OccurredAtUTC, RawJSON: d.RawJSON}
	if d.MediaServerID != nil {
		in.MediaServerID = *d.MediaServerID
	}
	if in.ReceivedHookName == "" {
		in.ReceivedHookName = d.HookName
	}
	return in, nil
}

// DropLegacyInbox removes up to batch of the hook copies an older version
// kept under LegacyInboxPrefix and returns how many it removed.
func (s *Service) DropLegacyInbox(ctx context.Context, batch int) (int64, error) {
	resp, err := s.Store.Range(ctx, LegacyInboxPrefix, store.RangeOptions{End: store.PrefixEnd(LegacyInboxPrefix), Limit: int64(batch), KeysOnly: true})
	if err != nil || len(resp.KVs) == 0 {
		return 0, err
	}
	last := resp.KVs[len(resp.KVs)-1].Key
	tr, err := s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{{Type: store.OpDelete, Key: LegacyInboxPrefix, End: last + "\x00"}}})
	if err != nil || len(tr.Responses) == 0 {
		return 0, err
	}
	return tr.Responses[0].Deleted, nil
}
