package retention_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/retention"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// A preview counts the history beyond the window and the probes of
// non-members and removes nothing; a run removes exactly those, keeps the
// member's probe and the newest history, and leaves nothing eligible.
func TestPreviewAndRun(t *testing.T) {
	ctx := context.Background()
	node := storetest.SingleNode(t)
	put := func(k, v string) {
		t.Helper()
		if _, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(k, []byte(v))}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		put("/test/k", fmt.Sprint(i))
	}
	put(cluster.ReadinessPrefix+"cp1", `{}`)  // the member (storetest's node id)
	put(cluster.ReadinessPrefix+"gone", `{}`) // a node that left
	c := retention.New(node, 10)

	p, err := c.Preview(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	if p.Actor != "alice" || p.Reason != "test" || len(p.Categories) != 2 {
		t.Fatalf("preview %+v", p)
	}
	hist, probes := p.Categories[0], p.Categories[1]
	keep := node.Revision() - 10
	if hist.Name != retention.WatchHistory || hist.KeepAfterRevision != keep || hist.EligibleCount < 20 || hist.OldestRevision < 1 || hist.OldestRevision > keep {
		t.Errorf("history %+v, want revisions up to %d eligible", hist, keep)
	}
	if probes.Name != retention.ReadinessProbes || probes.EligibleCount != 1 {
		t.Errorf("probes %+v, want the departed node's one", probes)
	}
	if again, _ := c.Preview(ctx, "alice", "test"); again.Categories[0].EligibleCount != hist.EligibleCount || again.Categories[1].EligibleCount != 1 {
		t.Errorf("a preview changed something: %+v", again)
	}

	r, err := c.Run(ctx, "alice", "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Categories) != 2 || r.Categories[0].Category != retention.WatchHistory || r.Categories[0].Deleted < hist.EligibleCount ||
		r.Categories[1].Category != retention.ReadinessProbes || r.Categories[1].Deleted != 1 {
		t.Fatalf("run %+v, preview said %+v", r, p)
	}
	if r.Revision != node.Revision() || r.FinishedAt.Before(r.StartedAt) {
		t.Errorf("run %+v at revision %d", r, node.Revision())
	}
	for k, want := range map[string]bool{cluster.ReadinessPrefix + "cp1": true, cluster.ReadinessPrefix + "gone": false} {
		kv, _, err := store.Get(ctx, node, k, store.Local)
		if err != nil || (kv != nil) != want {
			t.Errorf("%s present=%v (%v), want %v", k, kv != nil, err, want)
		}
	}
	after, err := c.Preview(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	if after.Categories[1].EligibleCount != 0 || after.Categories[0].EligibleCount > 1 {
		t.Errorf("after the run: %+v", after.Categories)
	}
}

// Asked for one category, a run touches only that one.
func TestRunOneCategory(t *testing.T) {
	ctx := context.Background()
	node := storetest.SingleNode(t)
	for i := range 20 {
		if _, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(cluster.ReadinessPrefix+fmt.Sprint("gone", i%2), []byte("{}"))}}); err != nil {
			t.Fatal(err)
		}
	}
	c := retention.New(node, 5)
	r, err := c.Run(ctx, "system", "", []string{retention.ReadinessProbes})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Categories) != 1 || r.Categories[0].Category != retention.ReadinessProbes || r.Categories[0].Deleted != 2 {
		t.Fatalf("run %+v", r)
	}
	p, err := c.Preview(ctx, "system", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Categories[0].EligibleCount < 14 {
		t.Errorf("history was compacted though not asked for: %+v", p.Categories[0])
	}
}
