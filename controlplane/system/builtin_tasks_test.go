package system_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/retention"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/controlplane/system"
	"github.com/svcplatform/svc/controlplane/tasks"
	"github.com/svcplatform/svc/test/testkit"
)

// TestBuiltinTasks: on a single leading node, the built-in tasks run for
// real against the store and raft: a snapshot at the applied index, a
// passing parity audit, and the retention cleanup's preview and run
// reporting each category.
func TestBuiltinTasks(t *testing.T) {
	ctx := context.Background()
	node := storetest.SingleNode(t)
	put(t, node, cluster.IdentityKey, cluster.Identity{ClusterID: "c-1", CreatedAt: time.Now()})
	for i := range 5 {
		put(t, node, "/test/k", i)
	}
	reg := tasks.New(zaptest.NewLogger(t), node.Leadership().IsLeader)
	s := system.New(system.Deps{Node: node, NodeID: "cp1", Tasks: reg, Retention: retention.New(node, 2),
		Cluster: cluster.New(cluster.Deps{Node: node, NodeID: "cp1"})})
	s.RegisterBuiltinTasks()

	names := map[string]tasks.Status{}
	for _, st := range reg.List() {
		names[st.Name] = st
	}
	if len(names) != 3 || !names["data-retention-cleanup"].LeaderOnly || !names["data-retention-cleanup"].Preview ||
		names["data-retention-cleanup"].Interval == 0 || names["store-snapshot"].Interval != 0 || names["parity-audit"].Preview {
		t.Fatalf("built-in tasks %+v", names)
	}

	snap, err := reg.RunNow(ctx, "store-snapshot", false)
	if err != nil || !snap.Succeeded {
		t.Fatalf("snapshot %+v %v", snap, err)
	}
	if idx, _ := strconv.ParseUint(snap.Details["index"], 10, 64); idx == 0 || idx > node.Raft().LastIndex() {
		t.Errorf("snapshot index %q, last index %d", snap.Details["index"], node.Raft().LastIndex())
	}

	var parity tasks.RunResult
	testkit.Eventually(t, 30*time.Second, "a passing parity audit", func() bool {
		parity, err = reg.RunNow(ctx, "parity-audit", false)
		return err == nil && parity.Succeeded
	})
	if rev, _ := strconv.ParseInt(parity.Details["comparedRevision"], 10, 64); rev < 6 || parity.Details["problems"] != "0" {
		t.Errorf("parity %+v", parity)
	}

	preview, err := reg.RunNow(ctx, "data-retention-cleanup", true)
	if err != nil || !preview.Succeeded || !preview.Preview {
		t.Fatalf("retention preview %+v %v", preview, err)
	}
	for _, c := range retention.Categories {
		if _, ok := preview.Details[c]; !ok {
			t.Errorf("no %s in the preview %+v", c, preview.Details)
		}
	}
	run, err := reg.RunNow(ctx, "data-retention-cleanup", false)
	if err != nil || !run.Succeeded || run.Summary != "retention applied" {
		t.Fatalf("retention run %+v %v", run, err)
	}
	for _, c := range retention.Categories {
		if _, ok := run.Details[c]; !ok {
			t.Errorf("no %s in the run %+v", c, run.Details)
		}
	}
	for _, st := range reg.List() {
		if st.Name == "data-retention-cleanup" && (st.Runs != 1 || st.LastResult != "retention applied") {
			t.Errorf("history after one run and a preview: %+v", st)
		}
	}
}
