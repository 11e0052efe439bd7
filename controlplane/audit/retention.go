package audit

import (
	"context"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// Retention bounds the audit log: records older than MaxAge, and the
// oldest beyond MaxEntries, are removed. Without it every denied request
// of every credential would stay for ever.
type Retention struct {
	MaxAge     time.Duration
	MaxEntries int
}

// Prune removes up to batch records the retention no longer keeps, oldest
// first (keys are UUIDv7, so key order is time order), and returns how
// many it removed. The leader runs it (task audit-retention); records are
// append-only, so the deletions need no compare.
func Prune(ctx context.Context, s store.Store, r Retention, now time.Time, batch int) (int64, error) {
	end := store.PrefixEnd(KeyPrefix)
	count, err := s.Range(ctx, KeyPrefix, store.RangeOptions{End: end, CountOnly: true})
	if err != nil {
		return 0, err
	}
	excess := count.Count - int64(r.MaxEntries)
	oldest, err := s.Range(ctx, KeyPrefix, store.RangeOptions{End: end, Limit: int64(batch), KeysOnly: true})
	if err != nil {
		return 0, err
	}
	cutoff := keyBefore(now.Add(-r.MaxAge))
	var ops []store.Op
	for i, kv := range oldest.KVs {
		if kv.Key >= cutoff && int64(i) >= excess {
			break
		}
		ops = append(ops, store.Delete(kv.Key))
	}
	if len(ops) == 0 {
		return 0, nil
	}
	if _, err := s.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		return 0, err
	}
	return int64(len(ops)), nil
}

// Excess is how many records the retention would remove now.
func Excess(ctx context.Context, s store.Store, r Retention, now time.Time) (int64, error) {
	all, err := s.Range(ctx, KeyPrefix, store.RangeOptions{End: store.PrefixEnd(KeyPrefix), CountOnly: true})
	if err != nil {
		return 0, err
	}
	old, err := s.Range(ctx, KeyPrefix, store.RangeOptions{End: keyBefore(now.Add(-r.MaxAge)), CountOnly: true})
	if err != nil {
		return 0, err
	}
	return max(old.Count, all.Count-int64(r.MaxEntries), 0), nil
}
