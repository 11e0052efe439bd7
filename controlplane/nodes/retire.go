package nodes

import (
	"context"
	"fmt"

	"github.com/svcplatform/svc/controlplane/audit"
)

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
		t.ops = append(t.ops, op)
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
