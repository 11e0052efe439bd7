package playback

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// SweepInterval is how often the leader ends leases that ran out or whose
// token lost its right, and cuts their players; with the engine's answer
// cache of at most 5 s this keeps the contract's "cut within 5 s".
const SweepInterval = time.Second

// keepEnded is how long ended leases and used one-time grants stay
// readable before they are removed.
const keepEnded = 24 * time.Hour

// RunSweeper ends and cuts leases until ctx ends; it runs on the leader.
// A tick looks for leases to end (endLeases) only when something could
// have changed a verdict since the last look: a lease or token changed
// (their areas' revisions moved), or a lease or token reached its expiry.
// Otherwise it only looks for cuts still to make.
func (s *Service) RunSweeper(ctx context.Context, log *zap.Logger) {
	t := time.NewTicker(SweepInterval)
	defer t.Stop()
	lastPrune := time.Time{}
	var last sweepMark
	stamped := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		if mark := s.sweepMark(); !last.covers(mark, s.now()) {
			var stampErr error
			if !stamped {
				stampErr = s.stampUnindexed(ctx)
				stamped = stampErr == nil
			}
			due, endErr := s.endLeases(ctx, last.tokensMoved(mark))
			if err = errors.Join(stampErr, endErr); err == nil {
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

// sweepMark is what a look at the leases depended on: the leases'
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

// tokensMoved tells whether the tokens must be checked again: a token
// changed, or the last look did not check them. A token's own expiry
// needs no check: a lease never outlives its token (AbsoluteExpiresAt),
// so the lease's expiry ends it first. A lease created in the moment
// between its request's authentication and its write, while a revocation
// was being checked, is not found; it has no player to cut, because
// on_play checks the token of every new player. (A renewed lease was
// Active before too, so the check finds it.)
func (m sweepMark) tokensMoved(now sweepMark) bool {
	return !m.ok || m.tokens < 0 || now.tokens != m.tokens
}

// covers tells whether the last look still decides every lease now.
func (m sweepMark) covers(now sweepMark, at time.Time) bool {
	return m.ok && m.leases >= 0 && m.tokens >= 0 && now.leases == m.leases && now.tokens == m.tokens && at.Before(m.due)
}

// Sweep ends every Active lease past its time or whose token is no longer
// valid or lost the lease's permission, then asks the media servers to cut
// the players of every lease that must be cut.
func (s *Service) Sweep(ctx context.Context) error {
	stampErr := s.stampUnindexed(ctx)
	_, endErr := s.endLeases(ctx, true)
	return errors.Join(stampErr, endErr, s.cutPending(ctx))
}

// farFuture stands for "no expiry seen".
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// endLeases ends the Active leases that must end and returns the earliest
// time a remaining one expires. It reads only what can end, so its cost
// follows the leases ending, not the leases alive (players renew all the
// time on a busy platform, so a look that decoded every Active lease would
// run at nearly every tick): the ends_at_ms index finds the leases whose
// time has come. With tokens set it also checks each distinct (token,
// permission) pair of the Active leases once, and reads the leases of a
// pair that fails.
func (s *Service) endLeases(ctx context.Context, tokens bool) (time.Time, error) {
	now := s.now()
	var errs []error
	// Searching by ends_at_ms: the state index would walk every Active lease.
	candidates, err := query.All(ctx, s.Reader, query.Query{Index: LeaseIndex.Name,
		Where: []query.Cond{query.Le("ends_at_ms", now.UnixMilli()), query.Eq("state", StateActive)},
		Order: []query.Order{query.Asc("ends_at_ms")}, Using: "ends_at_ms"}, query.JSON[Lease])
	if err != nil {
		return farFuture, err
	}
	for _, l := range candidates {
		switch {
		case !now.Before(l.AbsoluteExpiresAt):
			errs = append(errs, s.end(ctx, l.LeaseID, StateExpired, "reached its absolute lifetime"))
		case !now.Before(l.ExpiresAt):
			errs = append(errs, s.end(ctx, l.LeaseID, StateExpired, "expired without renewal"))
		}
	}
	if tokens {
		errs = append(errs, s.endTokenless(ctx))
	}
	due := farFuture
	err = s.Reader.View(ctx, func(v query.View) error {
		first, ok, err := v.Min(LeaseIndex.Name, "ends_at_ms")
		if ok {
			due = time.UnixMilli(first).UTC()
		}
		return err
	})
	return due, errors.Join(append(errs, err)...)
}

// endTokenless ends the Active leases whose token is no longer valid or
// lost the lease's permission, checking each distinct (token, permission)
// pair once.
func (s *Service) endTokenless(ctx context.Context) error {
	type pair struct{ token, permission string }
	var pairs []pair
	err := s.Reader.View(ctx, func(v query.View) error {
		tuples, err := v.Distinct(LeaseIndex.Name, []string{"token_id", "permission"}, query.Eq("state", StateActive))
		for _, t := range tuples {
			pairs = append(pairs, pair{t[0], t[1]})
		}
		return err
	})
	if err != nil {
		return err
	}
	var errs []error
	tokens := map[string]TokenState{}
	for _, p := range pairs {
		ts, ok := tokens[p.token]
		if !ok {
			if ts, err = s.Tokens(ctx, p.token); err != nil {
				errs = append(errs, err)
				continue
			}
			tokens[p.token] = ts
		}
		if ts.Valid && s.Grants(ts.Permissions, p.permission) {
			continue
		}
		lost, err := query.All(ctx, s.Reader, query.Query{Index: LeaseIndex.Name,
			Where: []query.Cond{query.Eq("state", StateActive), query.Eq("token_id", p.token), query.Eq("permission", p.permission)}},
			query.JSON[Lease])
		errs = append(errs, err)
		for _, l := range lost {
			errs = append(errs, s.end(ctx, l.LeaseID, StateRevoked, "its API token was revoked, expired or lost "+l.Permission))
		}
	}
	return errors.Join(errs...)
}

// stampUnindexed rewrites the Active leases stored without EndsAtMs (by a
// version before it was kept), so the expiry index finds them; the
// sweeper runs it once when it starts.
func (s *Service) stampUnindexed(ctx context.Context) error {
	old, err := query.All(ctx, s.Reader, query.Query{Index: LeaseIndex.Name,
		Where: []query.Cond{query.Eq("state", StateActive), query.IsNull("ends_at_ms")}}, query.JSON[Lease])
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range old {
		_, err := store.Update(ctx, s.Store, LeasesPrefix+l.LeaseID, func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
			l, err := decodeLease(kv)
			if err != nil {
				return nil, nil, nil, err
			}
			b, err := json.Marshal(l)
			return b, nil, nil, err
		})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
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
	cut, err := query.All(ctx, s.Reader, query.Query{Index: LeaseIndex.Name, Limit: 1000,
		Where: []query.Cond{query.Eq("cut_requested", 1), query.AnyOf(query.IsNull("cut_done"), query.Eq("cut_done", 0))}},
		query.JSON[Lease])
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

// prune removes leases ended long ago, and one-time grants and media
// links past their time.
func (s *Service) prune(ctx context.Context) error {
	now := s.now()
	ended, err := query.All(ctx, s.Reader, query.Query{Index: LeaseIndex.Name, Limit: 1000,
		Where: []query.Cond{query.Ne("state", StateActive), query.NotNull("ended_at")}}, query.JSON[Lease])
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
		if g, err := store.Decode[OneTime](kv); err == nil && now.After(g.ExpiresAt) {
			ops = append(ops, store.Delete(kv.Key))
		}
	}
	links, err := s.Store.Range(ctx, linksPrefix, store.RangeOptions{End: store.PrefixEnd(linksPrefix)})
	if err != nil {
		return err
	}
	for _, kv := range links.KVs {
		if l, err := store.Decode[MediaLink](kv); err == nil && now.After(l.ExpiresAt) {
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
