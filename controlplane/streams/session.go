// Package streams turns what the media engines report into the control
// plane's view of live streams: stream sessions (one per media server and
// vhost/app/stream) that become Online only when media arrives, the
// media.stream.online/offline events written with them, and the channel
// state that follows. It is also the bridge from playback to streams: it
// locates a channel's stream for the playback service.
package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// SessionsPrefix holds one record per media server and stream.
const SessionsPrefix = "/streams/sessions/"

// SessionIndex serves the session listing and the playback lookup.
var SessionIndex = query.Index{Name: "stream_sessions", Prefix: SessionsPrefix, Columns: []query.Column{
	{Name: "media_server_id", Type: "TEXT", Path: "$.mediaServerId"},
	{Name: "vhost", Type: "TEXT", Path: "$.vhost"},
	{Name: "app", Type: "TEXT", Path: "$.app"},
	{Name: "stream", Type: "TEXT", Path: "$.stream"},
	{Name: "state", Type: "TEXT", Path: "$.state"},
	{Name: "channel_id", Type: "TEXT", Path: "$.channelId"},
}}

// Session states (the contract's stream state filter takes Online).
const (
	StateOnline  = "Online"
	StateOffline = "Offline"
)

// Track describes one elementary stream as the engine reported it.
type Track struct {
	Kind       string  `json:"kind"`
	Codec      string  `json:"codec"`
	Width      int     `json:"width,omitempty"`
	Height     int     `json:"height,omitempty"`
	FPS        float64 `json:"fps,omitempty"`
	SampleRate int     `json:"sampleRate,omitempty"`
	Channels   int     `json:"channels,omitempty"`
}

// Session is a stream on one media server.
type Session struct {
	SessionID     string     `json:"sessionId"`
	MediaServerID string     `json:"mediaServerId"`
	NodeID        string     `json:"nodeId,omitempty"`
	Vhost         string     `json:"vhost"`
	App           string     `json:"app"`
	Stream        string     `json:"stream"`
	ChannelID     string     `json:"channelId,omitempty"`
	State         string     `json:"state"`
	Schemas       []string   `json:"schemas,omitempty"`
	Origin        string     `json:"origin,omitempty"`
	Tracks        []Track    `json:"tracks,omitempty"`
	OnlineAt      *time.Time `json:"onlineAt,omitempty"`
	OfflineAt     *time.Time `json:"offlineAt,omitempty"`
	UpdatedAt     time.Time  `json:"updatedAt"`
}

// Change is one stream registration or deregistration an engine reported.
type Change struct {
	MediaServerID string
	NodeID        string
	Vhost         string
	App           string
	Stream        string
	Online        bool
	Schemas       []string
	Origin        string
	Tracks        []Track
	At            time.Time
	// Cause says why, when the report does not come from the engine's own
	// hook (the reconciler: the engine restarted, the engine does not list
	// the stream); it goes into the channel's runtime log.
	Cause string
	// IfModRevision, when set, applies the change only while the session's
	// mod revision is still this one (0: no session yet); otherwise Apply
	// answers ErrSessionChanged. The reconciler decides from what it read
	// at that revision, and a hook that landed since knows better.
	IfModRevision *int64
}

// ErrSessionChanged answers a guarded change whose session moved on.
var ErrSessionChanged = fault.NewRetryable(fault.Conflict, "conflict", "streams: the session changed since it was read")

// Service keeps stream sessions.
type Service struct {
	Store    store.Store
	Reader   query.Reader
	Channels *channels.Service
	// NodeID is this control node, the events' originating node.
	NodeID string
}

func sessionKey(mediaServerID, vhost, app, stream string) string {
	return SessionsPrefix + url.PathEscape(mediaServerID) + "/" + url.PathEscape(vhost) + "/" + url.PathEscape(app) + "/" + url.PathEscape(stream)
}

// streamEvent is the data of media.stream.online/offline, with the
// contract's capitalisation.
type streamEvent struct {
	MediaServerID *string   `json:"MediaServerId"`
	Vhost         *string   `json:"Vhost"`
	App           *string   `json:"App"`
	StreamID      *string   `json:"streamId"`
	Schema        *string   `json:"schema"`
	Online        bool      `json:"online"`
	OccurredAtUTC time.Time `json:"occurredAtUtc"`
}

// Apply records a registration or deregistration: the session and its
// event in one Txn (a repeated report with no change of state writes
// nothing), then the owning channel's actual state.
func (s *Service) Apply(ctx context.Context, c Change) (*Session, error) {
	if c.MediaServerID == "" || c.App == "" || c.Stream == "" {
		return nil, fmt.Errorf("streams: a change needs mediaServerId, app and stream")
	}
	if c.Vhost == "" {
		c.Vhost = channels.DefaultVhost
	}
	if c.At.IsZero() {
		c.At = time.Now().UTC()
	}
	var ch *channels.Channel
	if s.Channels != nil {
		var err error
		ch, err = s.Channels.ByStream(ctx, c.Vhost, c.App, c.Stream)
		if err != nil && !errors.Is(err, channels.ErrNotFound) {
			return nil, err
		}
	}
	key := sessionKey(c.MediaServerID, c.Vhost, c.App, c.Stream)
	var out *Session
	changed := false
	_, err := store.Update(ctx, s.Store, key, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if c.IfModRevision != nil {
			var rev int64
			if kv != nil {
				rev = kv.ModRevision
			}
			if rev != *c.IfModRevision {
				return nil, nil, nil, ErrSessionChanged
			}
		}
		sess := &Session{}
		if kv != nil {
			cur, err := store.Decode[Session](kv)
			if err != nil {
				return nil, nil, nil, err
			}
			sess = &cur
		}
		state := StateOffline
		if c.Online {
			state = StateOnline
		}
		changed = sess.State != state
		if sess.SessionID == "" || (changed && c.Online) {
			id, _ := uuid.NewV7()
			sess.SessionID = id.String()
		}
		sess.MediaServerID, sess.NodeID, sess.Vhost, sess.App, sess.Stream = c.MediaServerID, c.NodeID, c.Vhost, c.App, c.Stream
		sess.State, sess.UpdatedAt = state, c.At
		if ch != nil {
			sess.ChannelID = string(ch.ChannelID)
		}
		if c.Online {
			sess.Schemas, sess.Origin, sess.Tracks = c.Schemas, c.Origin, c.Tracks
			if changed {
				sess.OnlineAt, sess.OfflineAt = &c.At, nil
			}
		} else if changed {
			sess.OfflineAt = &c.At
		}
		out = sess
		b, err := json.Marshal(sess)
		if err != nil || !changed {
			return b, nil, nil, err
		}
		name := events.MediaStreamOffline
		if c.Online {
			name = events.MediaStreamOnline
		}
		schema := c.Origin
		ev, err := events.New(name, events.SourceMedia, s.NodeID, streamEvent{MediaServerID: &c.MediaServerID, Vhost: &c.Vhost, App: &c.App,
			StreamID: &c.Stream, Schema: &schema, Online: c.Online, OccurredAtUTC: c.At})
		if err != nil {
			return nil, nil, nil, err
		}
		op, err := events.Op(ev)
		if err != nil {
			return nil, nil, nil, err
		}
		ops := []store.Op{op}
		if ch != nil {
			msg, actor := fmt.Sprintf("media server %s reports %s/%s %s", c.MediaServerID, c.App, c.Stream, state), "engine:"+c.MediaServerID
			if c.Cause != "" {
				msg, actor = fmt.Sprintf("%s/%s %s on media server %s: %s", c.App, c.Stream, state, c.MediaServerID, c.Cause), "system:stream-reconciler"
			}
			lop, err := channels.LogOp(channels.LogEntry{ChannelID: ch.ChannelID, Kind: channels.LogStream, Event: "stream." + map[bool]string{true: "online", false: "offline"}[c.Online],
				Message: msg, Actor: actor, OccurredAt: c.At})
			if err != nil {
				return nil, nil, nil, err
			}
			ops = append(ops, lop)
		}
		return b, ops, nil, nil
	})
	if err != nil {
		return nil, err
	}
	if ch != nil && changed {
		if err := s.followChannel(ctx, ch, c); err != nil {
			return out, err
		}
	}
	return out, nil
}

// followChannel moves the owning channel's actual state with its stream. A
// stream lost while the channel should run counts as a failed attempt, so
// auto-recovery backs off.
func (s *Service) followChannel(ctx context.Context, ch *channels.Channel, c Change) error {
	a := channels.Actor{Type: "engine", ID: c.MediaServerID}
	if c.Online {
		_, err := s.Channels.SetActualState(ctx, a, ch.ChannelID, channels.ActualOnline, "media arrived on "+c.MediaServerID)
		return err
	}
	if ch.DesiredState == channels.DesiredRunning {
		cause := "the stream went offline on " + c.MediaServerID
		if c.Cause != "" {
			cause = c.Cause
		}
		_, err := s.Channels.RecordFailedAttempt(ctx, a, ch.ChannelID, cause)
		return err
	}
	_, err := s.Channels.SetActualState(ctx, a, ch.ChannelID, channels.ActualOffline, "stopped")
	return err
}

// Session reads one session; nil when there is none.
func (s *Service) Session(ctx context.Context, mediaServerID, vhost, app, stream string) (*Session, error) {
	if vhost == "" {
		vhost = channels.DefaultVhost
	}
	kv, _, err := store.Get(ctx, s.Store, sessionKey(mediaServerID, vhost, app, stream), store.Local)
	if err != nil || kv == nil {
		return nil, err
	}
	sess, err := store.Decode[Session](kv)
	return &sess, err
}

// Codecs are the codecs of a stream's tracks as its media server last
// reported them; none for a stream it never reported.
func (s *Service) Codecs(ctx context.Context, mediaServerID, vhost, app, stream string) ([]string, error) {
	sess, err := s.Session(ctx, mediaServerID, vhost, app, stream)
	if err != nil || sess == nil {
		return nil, err
	}
	out := make([]string, 0, len(sess.Tracks))
	for _, t := range sess.Tracks {
		out = append(out, t.Codec)
	}
	return out, nil
}

// Locate implements playback.Streams: the channel's stream and whether it
// is Online on the channel's media server.
func (s *Service) Locate(ctx context.Context, channelID string) (playback.StreamLocation, error) {
	ch, err := s.Channels.Get(ctx, channels.ChannelID(channelID))
	if err != nil {
		if errors.Is(err, channels.ErrNotFound) {
			return playback.StreamLocation{}, fmt.Errorf("%w: channel %q", playback.ErrNotFound, channelID)
		}
		return playback.StreamLocation{}, err
	}
	loc := playback.StreamLocation{ChannelID: channelID, MediaServerID: ch.MediaServerID, Vhost: ch.Vhost, App: ch.App, Stream: ch.Stream}
	if ch.MediaServerID == "" {
		return loc, nil
	}
	sess, err := s.Session(ctx, ch.MediaServerID, ch.Vhost, ch.App, ch.Stream)
	if err != nil {
		return loc, err
	}
	loc.Online = sess != nil && sess.State == StateOnline
	return loc, nil
}

// LocateStream implements playback.Streams: the Online stream of a
// locator, on the media server it names or, when it names none, on the one
// media server where it is Online. A stream that is not Online anywhere it
// is looked for is not ready (contract B's 409 stream_not_ready: "stream
// ... not yet playable"), whether it never came or went away.
func (s *Service) LocateStream(ctx context.Context, l playback.StreamLocator) (playback.StreamLocation, error) {
	if l.Vhost == "" {
		l.Vhost = channels.DefaultVhost
	}
	notReady := fmt.Errorf("%w: %s/%s is not Online; publish it, then poll the streams until it is", playback.ErrStreamNotReady, l.App, l.Stream)
	var found []Session
	if l.MediaServerID != "" {
		sess, err := s.Session(ctx, l.MediaServerID, l.Vhost, l.App, l.Stream)
		if err != nil {
			return playback.StreamLocation{}, err
		}
		if sess != nil {
			found = append(found, *sess)
		}
	} else {
		rows, _, err := s.Sessions(ctx, SessionQuery{Stream: l.Stream, State: StateOnline, Page: 1, PageSize: 100})
		if err != nil {
			return playback.StreamLocation{}, err
		}
		for _, r := range rows {
			if r.App == l.App && r.Vhost == l.Vhost {
				found = append(found, r)
			}
		}
	}
	switch {
	case len(found) > 1:
		return playback.StreamLocation{}, fmt.Errorf("%w: %s/%s is Online on %d media servers; name mediaServerId", playback.ErrInvalid, l.App, l.Stream, len(found))
	case len(found) == 0 || found[0].State != StateOnline:
		return playback.StreamLocation{}, notReady
	}
	f := found[0]
	return playback.StreamLocation{ChannelID: f.ChannelID, MediaServerID: f.MediaServerID, Vhost: f.Vhost, App: f.App, Stream: f.Stream, Online: true}, nil
}

// SessionQuery filters the session listing; zero values do not filter.
type SessionQuery struct {
	MediaServerID, Stream, State, ChannelID string
	Page, PageSize                          int
}

// Sessions lists sessions, newest change first.
func (s *Service) Sessions(ctx context.Context, q SessionQuery) ([]Session, int64, error) {
	var where query.Where
	where.EqIfSet("media_server_id", q.MediaServerID)
	where.EqIfSet("stream", q.Stream)
	where.EqIfSet("state", q.State)
	where.EqIfSet("channel_id", q.ChannelID)
	return query.Page(ctx, s.Reader, query.Query{Index: SessionIndex.Name, Where: where, Order: []query.Order{query.Asc(query.Key)}},
		max(q.Page, 1), max(q.PageSize, 1), query.JSON[Session])
}
