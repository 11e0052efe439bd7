package apitoken

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// UsagePrefix holds when each token was last used (Unix milliseconds), apart
// from the token record: the record's key area is what the credential
// caches follow, and a use is not a change of the token.
const UsagePrefix = "/security/api-token-usage/"

// Usage remembers, on one control node, when tokens were last used, and
// writes that to the store in batches (one Txn per flush, every minute by
// default), never once per request.
type Usage struct {
	Store store.Store
	mu    sync.Mutex
	seen  map[string]int64
}

// Touch notes that token id authenticated a request at t.
func (u *Usage) Touch(id string, t time.Time) {
	if u == nil {
		return
	}
	ms := t.UnixMilli()
	u.mu.Lock()
	if u.seen == nil {
		u.seen = map[string]int64{}
	}
	if ms > u.seen[id] {
		u.seen[id] = ms
	}
	u.mu.Unlock()
}

// Flush writes what was noted since the last flush, keeping a later use
// another node already wrote. It returns how many tokens it wrote.
func (u *Usage) Flush(ctx context.Context) (int, error) {
	u.mu.Lock()
	seen := u.seen
	u.seen = nil
	u.mu.Unlock()
	var ops []store.Op
	for id, ms := range seen {
		if kv, _, err := store.Get(ctx, u.Store, UsagePrefix+id, store.Local); err == nil && kv != nil {
			if prev, err := strconv.ParseInt(string(kv.Value), 10, 64); err == nil && prev >= ms {
				continue
			}
		}
		ops = append(ops, store.Put(UsagePrefix+id, []byte(strconv.FormatInt(ms, 10))))
	}
	written := 0
	for len(ops) > 0 {
		n := min(len(ops), 500)
		if _, err := u.Store.Txn(ctx, store.TxnRequest{Then: ops[:n]}); err != nil {
			return written, err
		}
		written, ops = written+n, ops[n:]
	}
	return written, nil
}

// Run flushes every interval until ctx ends, then once more.
func (u *Usage) Run(ctx context.Context, interval time.Duration, failed func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, err := u.Flush(fctx); err != nil {
				failed(err)
			}
			cancel()
			return
		case <-t.C:
			if _, err := u.Flush(ctx); err != nil && ctx.Err() == nil {
				failed(err)
			}
		}
	}
}

// LastUsed reads when a token was last used (nil: never, or not yet
// flushed).
func (s *Service) LastUsed(ctx context.Context, id string) *time.Time {
	kv, _, err := store.Get(ctx, s.Store, UsagePrefix+id, store.Local)
	if err != nil || kv == nil {
		return nil
	}
	ms, err := strconv.ParseInt(string(kv.Value), 10, 64)
	if err != nil {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}
