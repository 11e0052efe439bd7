package gb28181

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// RecordQueryRetention is how long record queries are kept after they
// were made by default (config gb28181-record-query-retention): long enough for a client to read and play what a query found
// (its playback actions carry no state of their own), short enough that a
// client polling queries all day does not grow the store for ever.
const RecordQueryRetention = 24 * time.Hour

// pruneBatch bounds the queries one Txn deletes; a query may hold
// thousands of entries, so batches stay small.
const pruneBatch = 100

// PruneRecordQueries deletes record queries made before before, at most
// limit per call (one Txn), and reports how many; call it again while it
// returns limit. Task ids are UUIDv7, so the keys of queries made before a
// time are one key range. A query still Running that old was left by a
// node that restarted mid-query (a run lives for its idle deadline, seconds)
// and can never finish: it goes too.
func PruneRecordQueries(ctx context.Context, st store.Store, before time.Time, limit int) (int, error) {
	resp, err := st.Range(ctx, RecordQueryPrefix, store.RangeOptions{End: RecordQueryPrefix + uuidV7Prefix(before), Limit: int64(limit), KeysOnly: true})
	if err != nil || len(resp.KVs) == 0 {
		return 0, err
	}
	ops := make([]store.Op, len(resp.KVs))
	for i, kv := range resp.KVs {
		ops[i] = store.Delete(kv.Key)
	}
	if _, err := st.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		return 0, err
	}
	return len(ops), nil
}

// PruneRecordQueriesLoop prunes every interval while ctx lives (run it on
// the leader), keeping retention; an error waits for the next round.
func PruneRecordQueriesLoop(ctx context.Context, st store.Store, retention, interval time.Duration, report func(removed int, err error)) {
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
			n, err := PruneRecordQueries(ctx, st, time.Now().Add(-retention), pruneBatch)
			total += n
			if err != nil || n < pruneBatch {
				report(total, err)
				break
			}
		}
	}
}

// uuidV7Prefix is the text of the first 48 bits (the Unix milliseconds) of
// a UUIDv7 made at t: every id made before t sorts below it.
func uuidV7Prefix(t time.Time) string {
	ms := uint64(t.UnixMilli())
	return fmt.Sprintf("%08x-%04x", ms>>16, ms&0xffff)
}
