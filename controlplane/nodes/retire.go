package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
)

// retiredKey marks a retired node, so a write can guard on its absence.
func retiredKey(id string) string { return RetiredPrefix + id }

// ActiveGuards are the compares that hold while a node exists and is not
// retired; a command for the node is created only if they hold, in the
// same Txn, so a retirement racing a creation cannot lose.
func ActiveGuards(nodeID string) []store.Compare {
	return []store.Compare{
		{Key: recordKey(nodeID), Target: store.TargetVersion, Result: store.Greater, Number: 0},
		store.Absent(retiredKey(nodeID)),
	}
}

// ByMediaServer finds the node serving a media server id (or, failing
// that, the node of that id).
func (s *Service) ByMediaServer(ctx context.Context, mediaServerID string) (*Record, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range all {
		if r.MediaServerID == mediaServerID {
			return r, nil
		}
	}
	for _, r := range all {
		if r.NodeID == mediaServerID {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: media server %q", ErrNotFound, mediaServerID)
}

// Retire marks a node retired for good: its certificates are refused from
// the next request on every control node that applied the change, its media
// server goes offline (media.server.stopped when it was online) and its id
// is never enrolled again. It returns once every reachable control node
// has applied it.
func (s *Service) Retire(ctx context.Context, actor audit.Actor, nodeID, reason string) (*Record, error) {
	var rev int64
	rec, err := s.change(ctx, nodeID, func(t *transition) error {
		if t.rec.Status == StatusRetired {
			return fmt.Errorf("%w: %q", ErrRetired, nodeID)
		}
		at := t.at
		t.rec.Status, t.rec.StatusChangedAt = StatusRetired, at
		t.rec.RetiredAt, t.rec.RetiredBy, t.rec.RetireReason = &at, actor.Type+":"+actor.ID, reason
		t.mediaDown(CauseRetired, false, true)
		op, err := actor.Success("node.retired", "node:"+nodeID, reason)
		if err != nil {
			return err
		}
		t.ops = append(t.ops, op, store.Put(retiredKey(nodeID), []byte(at.Format(time.RFC3339))))
		return nil
	})
	if err != nil {
		return nil, err
	}
	rev = s.Store.Revision()
	if s.Propagated != nil {
		if err := s.Propagated(ctx, rev); err != nil {
			return rec, fmt.Errorf("retired, but not every control node confirmed it yet: %w", err)
		}
	}
	return rec, nil
}
