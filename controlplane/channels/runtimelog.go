package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// LogKind groups runtime-log entries for filtering. Values are append-only.
type LogKind string

const (
	// LogConfig: created, updated, deleted, group changes, imports.
	LogConfig LogKind = "config"
	// LogActivation: activated, returned to the pending pool.
	LogActivation LogKind = "activation"
	// LogState: desired and actual state changes, pause, backoff.
	LogState LogKind = "state"
	// LogCommand: stream commands recorded and their state changes.
	LogCommand LogKind = "command"
	// LogStream: stream events reported by the engine (media arrived,
	// no readers, flow reports worth keeping).
	LogStream LogKind = "stream"
	// LogMediaServer: media server assignment.
	LogMediaServer LogKind = "media-server"
)

// LogKinds lists the kinds, for validating filters.
var LogKinds = []LogKind{LogConfig, LogActivation, LogState, LogCommand, LogStream, LogMediaServer}

// LogEntry is one runtime-log entry of a channel. It never holds a secret.
type LogEntry struct {
	EntryID   string    `json:"entryId"`
	ChannelID ChannelID `json:"channelId"`
	Kind      LogKind   `json:"kind"`
	// Event names what happened, e.g. channel.created,
	// actual_state.changed, command.recorded, stream.online.
	Event      string    `json:"event"`
	From       string    `json:"from,omitempty"`
	To         string    `json:"to,omitempty"`
	Message    string    `json:"message"`
	CommandID  CommandID `json:"commandId,omitempty"`
	Actor      string    `json:"actor"`
	TraceID    string    `json:"traceId,omitempty"`
	OccurredAt time.Time `json:"occurredAt"`
}

// LogOp returns the store operation that appends e to its channel's
// runtime log, filling its id and time. Other packages put it in their own
// Txn next to the change it describes (as audit.Op does for the audit log).
func LogOp(e LogEntry) (store.Op, error) {
	if e.ChannelID == "" || e.Kind == "" || e.Event == "" {
		return store.Op{}, fmt.Errorf("channels: a runtime-log entry needs a channel, kind and event")
	}
	id, err := uuid.NewV7()
	if err != nil {
		return store.Op{}, err
	}
	e.EntryID = id.String()
	if e.OccurredAt.IsZero() {
		e.OccurredAt = time.Now().UTC()
	}
	val, err := json.Marshal(e)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(runtimeLogKey(e.ChannelID, e.EntryID), val), nil
}

// LogQuery filters a channel's runtime log; zero values do not filter.
type LogQuery struct {
	Kind     LogKind
	From, To *time.Time
	// Oldest lists oldest first; newest first by default.
	Oldest   bool
	Page     int
	PageSize int
}

// RuntimeLog lists one page of a channel's runtime log and the total. A
// deleted channel's log stays readable for the audit.
func (s *Service) RuntimeLog(ctx context.Context, id ChannelID, q LogQuery) ([]LogEntry, int64, error) {
	if err := checkID(id); err != nil {
		return nil, 0, err
	}
	prefix := RuntimeLogPrefix + string(id) + "/"
	where := query.Where{query.Ge(query.Key, prefix), query.Lt(query.Key, store.PrefixEnd(prefix))}
	where.EqIfSet("kind", string(q.Kind))
	// Entry ids are UUIDv7, whose text starts with the millisecond time, so
	// time bounds are key bounds.
	if q.From != nil {
		where.Add(query.Ge(query.Key, prefix+uuidTimePrefix(*q.From)))
	}
	if q.To != nil {
		where.Add(query.Lt(query.Key, prefix+uuidTimePrefix(q.To.Add(time.Millisecond))))
	}
	order := query.Desc(query.Key)
	if q.Oldest {
		order = query.Asc(query.Key)
	}
	rows, total, err := query.Page(ctx, s.Reader, query.Query{Index: RuntimeLogIndex.Name, Where: where, Order: []query.Order{order}},
		q.Page, q.PageSize, query.JSON[LogEntry])
	if err != nil {
		return nil, 0, err
	}
	if total == 0 && q.Kind == "" && q.From == nil && q.To == nil {
		// No entry at all: the channel never existed.
		if _, err := s.Get(ctx, id); err != nil {
			return nil, 0, err
		}
	}
	return rows, total, nil
}

// uuidTimePrefix is the start of the text form of a UUIDv7 made at t
// (millisecond precision): the first 48 bits.
func uuidTimePrefix(t time.Time) string {
	ms := uint64(t.UnixMilli())
	return fmt.Sprintf("%08x-%04x", ms>>16, ms&0xffff)
}
