package talk

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// OwnerPrefix records which control node holds each talk session: its
// sender and the device's dialog live in that node's memory, so the other
// nodes pass the session's operations there.
const OwnerPrefix = "/talk/sessions/"

// Owner is the replicated record of where a session lives.
type Owner struct {
	SessionID string `json:"sessionId"`
	NodeID    string `json:"nodeId"`
	// Session is the session as created; once Ended, as it ended.
	Session *Session `json:"session,omitempty"`
	// Ended is set when the session's media was released (by its node,
	// which recorded how, or without it, the node being gone): reads
	// answer the recorded Session from then on, and nothing changes it.
	Ended bool `json:"ended,omitempty"`
	// CountedAt is when the node last recorded the session's counts
	// (packets and bytes sent); zero: never since its creation.
	CountedAt *time.Time `json:"countedAt,omitempty"`
}

// PutOwner records that nodeID holds session s.
func PutOwner(ctx context.Context, st store.Store, s *Session, nodeID string) error {
	op, err := store.PutRecord(OwnerPrefix+s.SessionID, Owner{SessionID: s.SessionID, NodeID: nodeID, Session: s})
	if err != nil {
		return err
	}
	_, err = st.Txn(ctx, store.TxnRequest{Then: []store.Op{op}})
	return err
}

// GetOwner reads the record of session id, ErrNotFound when none
// recorded it.
func GetOwner(ctx context.Context, st store.Store, id string) (*Owner, error) {
	o, kv, err := store.GetRecord[Owner](ctx, st, OwnerPrefix+id, store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return &o, nil
}

// EndedSession answers what an operation on an ended session gets: reads
// and releases its recorded state, audio and push-to-talk a conflict with
// the reason.
func (o *Owner) EndedSession(write bool) (*Session, error) {
	s := *o.Session
	if write {
		return nil, fmt.Errorf("%w: the media sender was released: %s", ErrNotSending, s.ReleaseReason)
	}
	return &s, nil
}

var errUnchanged = errors.New("unchanged")

// RecordState records what the node holding session s tells of it (its
// talk.Service's Record): a released session's final state, or its
// counts when its push-to-talk gate closed, so that once the node is gone
// the record says how the session ended and how much it sent, not what it
// was at its creation. A session already Ended keeps its record, and
// counts older than those recorded (two writes crossing) are not kept.
func RecordState(ctx context.Context, st store.Store, s Session, now time.Time) error {
	_, err := store.UpdateRecord(ctx, st, OwnerPrefix+s.SessionID, func(cur *Owner) (*Owner, []store.Op, []store.Compare, error) {
		if cur == nil || cur.Ended || (cur.Session != nil && cur.Session.PacketsSent > s.PacketsSent) {
			return nil, nil, nil, errUnchanged
		}
		at := now.UTC()
		s.Buffered = 0
		cur.Session, cur.CountedAt, cur.Ended = &s, &at, s.MediaState == MediaReleased
		return cur, nil, nil, nil
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// EndNode records the end of every session held by nodeID, which is gone
// (its sender went with it): Released, with reason, from then on. Sessions
// the node recorded as released keep their own end. The counts are those
// the node last recorded (when push-to-talk last closed), and the reason
// says as of when: the node that knew the rest is gone.
func EndNode(ctx context.Context, st store.Store, nodeID, reason string, now time.Time) (int, error) {
	owners, err := store.Records[Owner](ctx, st, OwnerPrefix, store.Local)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range owners {
		if o.NodeID != nodeID || o.Ended {
			continue
		}
		_, err := store.UpdateRecord(ctx, st, OwnerPrefix+o.SessionID, func(cur *Owner) (*Owner, []store.Op, []store.Compare, error) {
			if cur == nil || cur.Ended || cur.NodeID != nodeID {
				return nil, nil, nil, errUnchanged
			}
			if cur.Session == nil {
				cur.Session = &Session{SessionID: cur.SessionID}
			}
			at := now.UTC()
			cur.Ended = true
			cur.Session.MediaState, cur.Session.PTT, cur.Session.Buffered = MediaReleased, false, 0
			cur.Session.ReleasedAt, cur.Session.ReleaseReason = &at, reason+countsNote(cur.CountedAt)
			return cur, nil, nil, nil
		})
		if errors.Is(err, errUnchanged) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// countsNote says how old the counts of a session ended without its node
// are.
func countsNote(at *time.Time) string {
	if at == nil {
		return " (packets and bytes sent are unknown: the node recorded none since the session's creation)"
	}
	return " (packets and bytes sent as the node last recorded them, at " + at.UTC().Format(time.RFC3339) + ")"
}
