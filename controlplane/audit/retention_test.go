package audit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

func TestPruneByAgeAndCount(t *testing.T) {
	n := storetest.SingleNode(t, Index)
	ctx := context.Background()
	now := time.Now()
	// 30 records a year old, 30 from today, keyed like UUIDv7 ones.
	var ops []store.Op
	for i := range 60 {
		at := now.Add(-400 * 24 * time.Hour)
		if i >= 30 {
			at = now.Add(-time.Hour)
		}
		ops = append(ops, store.Put(fmt.Sprintf("%s-%04x-0000-000000000000", keyBefore(at.Add(time.Duration(i)*time.Millisecond)), i), []byte(`{}`)))
	}
	if _, err := n.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		t.Fatal(err)
	}
	count := func() int64 {
		r, _ := n.Range(ctx, KeyPrefix, store.RangeOptions{End: store.PrefixEnd(KeyPrefix), CountOnly: true})
		return r.Count
	}
	r := Retention{MaxAge: 365 * 24 * time.Hour, MaxEntries: 20}
	if got, err := Excess(ctx, n, r, now); err != nil || got != 40 {
		t.Fatalf("excess %d %v", got, err)
	}
	// By age first, in batches.
	if got, err := Prune(ctx, n, Retention{MaxAge: r.MaxAge, MaxEntries: 1000}, now, 25); err != nil || got != 25 {
		t.Fatalf("first batch %d %v", got, err)
	}
	if got, _ := Prune(ctx, n, Retention{MaxAge: r.MaxAge, MaxEntries: 1000}, now, 25); got != 5 || count() != 30 {
		t.Fatalf("second batch %d, left %d", got, count())
	}
	// Then by count: the oldest go.
	if got, _ := Prune(ctx, n, r, now, 500); got != 10 || count() != 20 {
		t.Fatalf("by count %d, left %d", got, count())
	}
	if got, _ := Prune(ctx, n, r, now, 500); got != 0 {
		t.Fatalf("nothing left to prune, removed %d", got)
	}
}
