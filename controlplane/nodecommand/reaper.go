package nodecommand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// ReapInterval is how often the leader looks for overdue commands.
const ReapInterval = 500 * time.Millisecond

// Reap hands out again every command whose delivery deadline passed
// without news from its agent, and times out those past their own deadline
// or out of attempts. It runs on the leader; each change compares the
// record it read, so an agent's result that lands first wins.
func (s *Service) Reap(ctx context.Context) (requeued, timedOut int, err error) {
	now := s.now()
	ms := now.UnixMilli()
	rows, err := s.rows(ctx, query.Query{Index: Index.Name, Limit: 500, Where: []query.Cond{query.AnyOf(
		query.AllOf(query.In("status", Dispatched, Running), query.Gt("visible_until_ms", 0), query.Le("visible_until_ms", ms)),
		query.AllOf(query.In("status", Pending, Dispatched, Running), query.Le("expires_ms", ms)),
	)}})
	if err != nil {
		return 0, 0, err
	}
	var errs []error
	for _, p := range rows {
		r := p.rec
		r.release()
		switch {
		case !now.Before(r.ExpiresAt):
			r.finish(now)
			r.Error = &Error{Code: "timed_out", Message: fmt.Sprintf("the command did not finish before its deadline %s", r.ExpiresAt.Format(time.RFC3339))}
			r.transition(TimedOut, now, s.LocalNodeID, "deadline passed")
		case r.Attempt >= r.MaxAttempts:
			r.finish(now)
			r.Error = &Error{Code: "timed_out", Message: fmt.Sprintf("no result from the agent after %d deliveries", r.Attempt)}
			r.transition(TimedOut, now, s.LocalNodeID, "attempts exhausted")
		default:
			r.transition(Pending, now, s.LocalNodeID, "delivery deadline passed without news from the agent; handing out again")
		}
		val, err := json.Marshal(r)
		if err != nil {
			return requeued, timedOut, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(p.key, p.rev)}, Then: []store.Op{store.Put(p.key, val)}})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !resp.Succeeded {
			continue
		}
		if r.Status == Pending {
			requeued++
		} else {
			timedOut++
		}
	}
	return requeued, timedOut, errors.Join(errs...)
}

// ReapLoop runs Reap until ctx ends; run it under the leadership handle.
func (s *Service) ReapLoop(ctx context.Context, log *zap.Logger) {
	t := time.NewTicker(ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rq, to, err := s.Reap(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("reaping overdue node commands failed", zap.Error(err))
		}
		if rq+to > 0 {
			log.Info("overdue node commands", zap.Int("handedOutAgain", rq), zap.Int("timedOut", to))
		}
	}
}
