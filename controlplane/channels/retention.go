package channels

import (
	"context"
	"database/sql"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
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
	err := s.Reader.ReadTx(ctx, func(tx *sql.Tx, _ int64) error {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`SELECT key FROM ` + RuntimeLogIndex.Table() + ` WHERE entry_id < ? ORDER BY entry_id LIMIT ?`, []any{cut, limit}},
			{`SELECT key FROM ` + CommandIndex.Table() + ` WHERE key < ? AND state IN (?, ?, ?, ?) ORDER BY key LIMIT ?`,
				[]any{CommandPrefix + cut, CommandSucceeded, CommandFailed, CommandTimedOut, CommandCanceled, limit}},
		} {
			rows, err := tx.QueryContext(ctx, q.sql, q.args...)
			if err != nil {
				return err
			}
			for rows.Next() && len(keys) < limit {
				var k string
				if err := rows.Scan(&k); err != nil {
					rows.Close()
					return err
				}
				keys = append(keys, k)
			}
			if err := rows.Close(); err != nil {
				return err
			}
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
