package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// RuntimeProtocol names the message format of the runtime-state WebSocket;
// it is also the WebSocket subprotocol a client may ask for.
const RuntimeProtocol = "svc.runtime-state.v1"

// Message types of the runtime-state WebSocket.
const (
	MsgHello  = "hello"
	MsgEvent  = "event"
	MsgResync = "resync"
)

// RuntimeMessage is one JSON text frame of the runtime-state WebSocket.
type RuntimeMessage struct {
	Type string `json:"type"`
	// Seq numbers the event messages of one logical stream: 1, 2, 3, …
	// without gaps. A resumed stream continues the numbers of the stream it
	// resumes; a resync starts again at 1. hello and resync carry the last
	// number used.
	Seq int64 `json:"seq"`
	// Cursor is what a client sends back (query `cursor`) to resume right
	// after this message.
	Cursor string `json:"cursor"`
	// Revision is the store revision the message reflects.
	Revision int64  `json:"revision"`
	Protocol string `json:"protocol,omitempty"`
	// Resumed is set on hello: true when the stream continues the one the
	// cursor came from.
	Resumed *bool `json:"resumed,omitempty"`
	// Reason explains a resync.
	Reason string `json:"reason,omitempty"`
	// Event is the state change (the outbox envelope, redacted).
	Event *Envelope `json:"event,omitempty"`
}

// cursor is a position in the stream: every outbox creation of revisions
// before rev and the first index creations of rev were seen, with seq event
// messages sent so far.
type cursor struct{ rev, index, seq int64 }

func (c cursor) String() string { return fmt.Sprintf("%d.%d.%d", c.rev, c.index, c.seq) }

func parseCursor(s string) (cursor, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return cursor{}, fmt.Errorf("%w: cursor %q is not REVISION.INDEX.SEQ", ErrInvalid, s)
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 || len(p) > 19 {
			return cursor{}, fmt.Errorf("%w: cursor %q is not REVISION.INDEX.SEQ", ErrInvalid, s)
		}
		n[i] = v
	}
	return cursor{rev: n[0], index: n[1], seq: n[2]}, nil
}

// RuntimeStream follows the outbox for one WebSocket connection, showing
// only events whose catalog permission the caller holds.
type RuntimeStream struct {
	store   store.Store
	allowed func(permission string) bool
	pos     cursor
	// skipRev and skip: when resuming inside a revision, its first skip
	// creations were already seen.
	skipRev, skip int64
	// life is the stream's own context (OpenRuntime's), which a resync's
	// new watch lives in.
	life   context.Context
	watch  <-chan store.WatchResponse
	cancel context.CancelFunc
	queue  []RuntimeMessage
}

// OpenRuntime starts a stream. cursor is empty for a new stream, or the
// cursor of the last message a client saw, to resume after it. allowed
// reports whether the caller holds a permission. It returns the hello
// message to send first.
func (s *Service) OpenRuntime(ctx context.Context, allowed func(string) bool, cur string) (*RuntimeStream, RuntimeMessage, error) {
	rs := &RuntimeStream{store: s.Store, allowed: allowed, life: ctx}
	resumed := false
	rs.pos = cursor{rev: s.Store.Revision() + 1}
	var hello RuntimeMessage
	if cur != "" {
		c, err := parseCursor(cur)
		if err != nil {
			return nil, RuntimeMessage{}, err
		}
		need := c.rev - 1
		if c.index > 0 {
			need = c.rev
		}
		// A client may reconnect to a node that has not applied its cursor
		// yet; wait a little for it rather than resyncing.
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = s.Store.WaitForRevision(wctx, need)
		cancel()
		if err == nil && c.rev > 0 {
			resumed = true
			rs.pos, rs.skipRev, rs.skip = c, c.rev, c.index
		}
	}
	hello = RuntimeMessage{Type: MsgHello, Seq: rs.pos.seq, Cursor: rs.pos.String(), Revision: rs.pos.rev - 1, Protocol: RuntimeProtocol, Resumed: &resumed}
	if cur != "" && !resumed {
		rs.queue = append(rs.queue, RuntimeMessage{Type: MsgResync, Cursor: rs.pos.String(), Revision: rs.pos.rev - 1,
			Reason: "this node has not reached the cursor's revision; read the current state and continue from here"})
	}
	// Counting within a revision restarts when its first event arrives.
	rs.pos.index = 0
	wctx, cancel := context.WithCancel(ctx)
	rs.cancel = cancel
	rs.watch = s.Store.Watch(wctx, OutboxPrefix, rs.pos.rev)
	return rs, hello, nil
}

// Close stops the stream's watch.
func (r *RuntimeStream) Close() { r.cancel() }

// Next blocks until the next message or until ctx ends.
func (r *RuntimeStream) Next(ctx context.Context) (RuntimeMessage, error) {
	for len(r.queue) == 0 {
		var resp store.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return RuntimeMessage{}, ctx.Err()
		case resp, ok = <-r.watch:
		}
		if !ok {
			if ctx.Err() != nil {
				return RuntimeMessage{}, ctx.Err()
			}
			return RuntimeMessage{}, errors.New("runtime stream: the store watch ended")
		}
		if resp.Err != nil {
			if !errors.Is(resp.Err, store.ErrCompacted) {
				return RuntimeMessage{}, resp.Err
			}
			r.resync("the history after the cursor was compacted; read the current state and continue from here")
			continue
		}
		r.take(resp.Events)
	}
	m := r.queue[0]
	r.queue = r.queue[1:]
	return m, nil
}

// resync restarts the stream at the current revision with numbering from 1.
func (r *RuntimeStream) resync(reason string) {
	r.cancel()
	wctx, cancel := context.WithCancel(r.life)
	r.cancel = cancel
	rev := r.store.Revision()
	r.pos, r.skip = cursor{rev: rev + 1}, 0
	r.watch = r.store.Watch(wctx, OutboxPrefix, rev+1)
	r.queue = append(r.queue, RuntimeMessage{Type: MsgResync, Cursor: r.pos.String(), Revision: rev, Reason: reason})
}

// take turns watch events into messages. Only creations count: the outbox
// is append-only, and retention deletes are not state changes.
func (r *RuntimeStream) take(evs []store.Event) {
	for _, ev := range evs {
		if ev.Type != store.EventPut || ev.KV.Version != 1 {
			continue
		}
		rev := ev.KV.ModRevision
		if rev != r.pos.rev {
			r.pos.rev, r.pos.index = rev, 0
		}
		r.pos.index++
		if rev == r.skipRev && r.pos.index <= r.skip {
			continue // seen before the resume
		}
		entry, err := DecodeEntry(ev.KV.Value)
		if err != nil || !r.allowed(PermissionFor(entry.EventName)) {
			continue
		}
		r.pos.seq++
		env := entry.Envelope
		env.Data = Redact(env.Data)
		r.queue = append(r.queue, RuntimeMessage{Type: MsgEvent, Seq: r.pos.seq, Cursor: r.pos.String(), Revision: rev, Event: &env})
	}
}
