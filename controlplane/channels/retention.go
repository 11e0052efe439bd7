package channels

import (
	"context"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// DefaultRetention is how long runtime-log entries and finished stream
// commands are kept. A channel that keeps failing writes an entry per
// attempt, so without a bound the log would grow for ever.
const DefaultRetention = 90 * 24 * time.Hour

// Prune removes runtime-log entries and finished stream commands created
// before before, at most limit keys per call (one Txn), and reports how many
// it removed; call it again while it returns limit. Only the leader needs to
// run it.
func (s *Service) Prune(ctx context.Context, before time.Time, limit int) (int, error) {
	cut := uuidTimePrefix(before)
	var keys []string
	err := s.Reader.View(ctx, func(v query.View) error {
		for _, q := range []query.Query{
			{Index: RuntimeLogIndex.Name, Where: []query.Cond{query.Lt("entry_id", cut)}, Order: []query.Order{query.Asc("entry_id")}},
			{Index: CommandIndex.Name, Where: []query.Cond{query.Lt(query.Key, CommandPrefix+cut),
				query.In("state", CommandSucceeded, CommandFailed, CommandTimedOut, CommandCanceled)}, Order: []query.Order{query.Asc(query.Key)}},
		} {
			if len(keys) >= limit {
				break
			}
			q.Limit = limit - len(keys)
			found, err := v.Keys(q)
			if err != nil {
				return err
			}
			keys = append(keys, found...)
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	ops := make([]store.Op, len(keys))
	for i, k := range keys {
		ops[i] = store.Delete(k)
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		return 0, err
	}
	return len(keys), nil
}

// PruneLoop prunes every interval while ctx lives (run it under the
// leadership handle), keeping retention; errors wait for the next round.
func (s *Service) PruneLoop(ctx context.Context, retention, interval time.Duration, report func(removed int, err error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		total := 0
		for ctx.Err() == nil {
			n, err := s.Prune(ctx, s.now().Add(-retention), 500)
			total += n
			if err != nil || n < 500 {
				report(total, err)
				break
			}
		}
	}
}
