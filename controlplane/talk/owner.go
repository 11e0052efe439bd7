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
	// Ended is set when the session ended without its node (the node is
	// gone): reads answer the recorded Session from then on.
	Ended bool `json:"ended,omitempty"`
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

// EndNode records the end of every session held by nodeID, which is gone
// (its sender went with it): Released, with reason, from then on. The
// counts are those the record last had: the node that knew them is gone.
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
			cur.Session.ReleasedAt, cur.Session.ReleaseReason = &at, reason
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
