package playback

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// SweepInterval is how often the leader ends leases that ran out or whose
// token lost its right, and cuts their players; with the engine's answer
// cache of at most 5 s this keeps the contract's "cut within 5 s".
const SweepInterval = time.Second

// keepEnded is how long ended leases and used one-time grants stay
// readable before they are removed.
const keepEnded = 24 * time.Hour

// RunSweeper ends and cuts leases until ctx ends; it runs on the leader.
// A tick reads every Active lease only when something could have changed
// a verdict since the last full look: a lease or token changed (their
// areas' revisions moved), or a lease or token reached its expiry.
// Otherwise it only looks for cuts still to make.
func (s *Service) RunSweeper(ctx context.Context, log *zap.Logger) {
	t := time.NewTicker(SweepInterval)
	defer t.Stop()
	lastPrune := time.Time{}
	var last sweepMark
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		if mark := s.sweepMark(); !last.covers(mark, s.now()) {
			var due time.Time
			if due, err = s.endLeases(ctx); err == nil {
				mark.due, mark.ok = due, true
			}
			last = mark
		}
		if err = errors.Join(err, s.cutPending(ctx)); err != nil && ctx.Err() == nil {
			log.Warn("lease sweep failed", zap.Error(err))
		}
		if time.Since(lastPrune) > time.Minute {
			lastPrune = time.Now()
			if err := s.prune(ctx); err != nil && ctx.Err() == nil {
				log.Warn("lease prune failed", zap.Error(err))
			}
		}
	}
}

// sweepMark is what a full look at the leases depended on: the leases'
// and the tokens' area revisions (taken before the look) and the earliest
// expiry among what it saw.
type sweepMark struct {
	leases, tokens int64
	due            time.Time
	ok             bool
}

func (s *Service) sweepMark() sweepMark {
	m := sweepMark{leases: s.revision(), tokens: -1}
	if s.TokensRevision != nil {
		m.tokens = s.TokensRevision()
	}
	return m
}

// covers tells whether the last full look still decides every lease now.
func (m sweepMark) covers(now sweepMark, at time.Time) bool {
	return m.ok && m.leases >= 0 && m.tokens >= 0 && now.leases == m.leases && now.tokens == m.tokens && at.Before(m.due)
}

// Sweep ends every Active lease past its time or whose token is no longer
// valid or lost the lease's permission, then asks the media servers to cut
// the players of every lease that must be cut.
func (s *Service) Sweep(ctx context.Context) error {
	_, err := s.endLeases(ctx)
	return errors.Join(err, s.cutPending(ctx))
}

// farFuture stands for "no expiry seen".
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// endLeases ends the Active leases that must end and returns the earliest
// time a remaining one (or its token) expires.
func (s *Service) endLeases(ctx context.Context) (time.Time, error) {
	due := farFuture
	active, _, err := sqlitefsm.IndexPage[Lease](ctx, s.Reader, "idx_"+LeaseIndex.Name, []string{"i.state = ?"}, []any{StateActive}, "i.key", 1, 1<<30)
	if err != nil {
		return due, err
	}
	now := s.now()
	tokens := map[string]TokenState{}
	var errs []error
	for i := range active {
		l := &active[i]
		reason, state := "", ""
		switch {
		case !now.Before(l.AbsoluteExpiresAt):
			reason, state = "reached its absolute lifetime", StateExpired
		case !now.Before(l.ExpiresAt):
			reason, state = "expired without renewal", StateExpired
		default:
			ts, ok := tokens[l.TokenID]
			if !ok {
				if ts, err = s.Tokens(ctx, l.TokenID); err != nil {
					errs = append(errs, err)
					continue
				}
				tokens[l.TokenID] = ts
			}
			if !ts.Valid || !s.Grants(ts.Permissions, l.Permission) {
				reason, state = "its API token was revoked, expired or lost "+l.Permission, StateRevoked
			} else {
				due = earliest(due, l.ExpiresAt, l.AbsoluteExpiresAt)
				if ts.ExpiresAt != nil {
					due = earliest(due, *ts.ExpiresAt)
				}
			}
		}
		if state != "" {
			errs = append(errs, s.end(ctx, l.LeaseID, state, reason))
		}
	}
	return due, errors.Join(errs...)
}

func earliest(t time.Time, more ...time.Time) time.Time {
	for _, m := range more {
		if m.Before(t) {
			t = m
		}
	}
	return t
}

// cutPending asks the media servers to cut the players of every lease
// whose cut was requested and not yet done.
func (s *Service) cutPending(ctx context.Context) error {
	cut, _, err := sqlitefsm.IndexPage[Lease](ctx, s.Reader, "idx_"+LeaseIndex.Name,
		[]string{"i.cut_requested = 1", "coalesce(i.cut_done, 0) = 0"}, nil, "i.key", 1, 1000)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range cut {
		if s.Cutter == nil {
			break
		}
		if err := s.Cutter.Cut(ctx, l.MediaServerID, l.LeaseID); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, s.markCut(ctx, l.LeaseID))
	}
	return errors.Join(errs...)
}

// end moves an Active lease to an ended state and asks for its cut.
func (s *Service) end(ctx context.Context, id, state, reason string) error {
	_, err := store.Update(ctx, s.Store, LeasesPrefix+id, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		l, err := decodeLease(kv)
		if err != nil {
			return nil, nil, nil, err
		}
		if l.State == StateActive {
			t := s.now()
			l.State, l.EndedAt, l.EndReason = state, &t, reason
		}
		l.CutRequested = true
		b, err := json.Marshal(l)
		return b, nil, nil, err
	})
	return err
}

func (s *Service) markCut(ctx context.Context, id string) error {
	_, err := store.Update(ctx, s.Store, LeasesPrefix+id, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		l, err := decodeLease(kv)
		if err != nil {
			return nil, nil, nil, err
		}
		l.CutDone = true
		b, err := json.Marshal(l)
		return b, nil, nil, err
	})
	return err
}

// prune removes leases ended long ago and one-time grants past their time.
func (s *Service) prune(ctx context.Context) error {
	now := s.now()
	ended, _, err := sqlitefsm.IndexPage[Lease](ctx, s.Reader, "idx_"+LeaseIndex.Name,
		[]string{"i.state != ?", "i.ended_at IS NOT NULL"}, []any{StateActive}, "i.key", 1, 1000)
	if err != nil {
		return err
	}
	var ops []store.Op
	for _, l := range ended {
		if l.EndedAt != nil && now.Sub(*l.EndedAt) > keepEnded && (!l.CutRequested || l.CutDone) {
			ops = append(ops, store.Delete(LeasesPrefix+l.LeaseID))
		}
	}
	resp, err := s.Store.Range(ctx, oneTimePrefix, store.RangeOptions{End: store.PrefixEnd(oneTimePrefix)})
	if err != nil {
		return err
	}
	for _, kv := range resp.KVs {
		var g OneTime
		if json.Unmarshal(kv.Value, &g) == nil && now.After(g.ExpiresAt) {
			ops = append(ops, store.Delete(kv.Key))
		}
	}
	for len(ops) > 0 {
		n := min(len(ops), 256)
		if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: ops[:n]}); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}
