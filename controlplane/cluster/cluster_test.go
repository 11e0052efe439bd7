package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/cluster"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/test/testkit"
)

func put(t *testing.T, st store.Store, key string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := st.Txn(context.Background(), store.TxnRequest{Then: []store.Op{store.Put(key, b)}}); err != nil {
		t.Fatal(err)
	}
}

// join opens a second member with the founder's link keys and joins it.
func join(t *testing.T, founder *raftnode.Node, keys *keyring.Keyring, id string) *raftnode.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	n, err := raftnode.Open(raftnode.Config{NodeID: id, DataDir: t.TempDir(), RaftBind: addr, LinkKeys: keys.LinkKeys(),
		Logger: zaptest.NewLogger(t).Named(id)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Kill() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := founder.Join(ctx, raftnode.JoinRequest{NodeID: id, RaftAddress: n.RaftAddress(), HTTPAddress: "http://" + id}); err != nil {
		t.Fatalf("join %s: %v", id, err)
	}
	return n
}

// A single healthy node: ok with every check passing, its identity once
// written, and readiness that writes and reads back through raft.
func TestHealthAndReadiness(t *testing.T) {
	ctx := context.Background()
	node := storetest.SingleNode(t)
	engines := struct{ running, enrolled int }{}
	s := cluster.New(cluster.Deps{Node: node, NodeID: "cp1", Engines: func(context.Context) (int, int, error) {
		return engines.running, engines.enrolled, nil
	}})

	h := s.Health(ctx)
	if h.Status != cluster.OK || h.NodeID != "cp1" || h.LeaderID != "cp1" || h.RaftState != "Leader" || h.ClusterID != "" {
		t.Errorf("health %+v", h)
	}
	names := map[string]bool{}
	for _, c := range h.Checks {
		names[c.Name] = true
		if c.Status != cluster.OK {
			t.Errorf("check %+v is not ok", c)
		}
	}
	for _, want := range []string{"leader", "apply-lag", "storage", "apply"} {
		if !names[want] {
			t.Errorf("no %s check in %+v", want, h.Checks)
		}
	}
	put(t, node, cluster.IdentityKey, cluster.Identity{ClusterID: "c-1", CreatedAt: time.Now()})
	if h := s.Health(ctx); h.ClusterID != "c-1" || h.Revision != node.Revision() {
		t.Errorf("after the identity: %+v at revision %d", h, node.Revision())
	}

	r := s.Readiness(ctx, false, false)
	if !r.Ready || r.NodeID != "cp1" {
		t.Errorf("readiness %+v", r)
	}
	for _, c := range r.Checks {
		if (c.Name == "database" || c.Name == "engine") != c.Skipped {
			t.Errorf("check %+v: only what was not asked for is skipped", c)
		}
	}

	before := node.Revision()
	r = s.Readiness(ctx, true, true)
	if r.Ready {
		t.Errorf("ready with no media server enrolled: %+v", r)
	}
	for _, c := range r.Checks {
		switch c.Name {
		case "database":
			if !c.OK || c.Skipped {
				t.Errorf("database check %+v", c)
			}
		case "engine":
			if c.OK || c.Skipped {
				t.Errorf("engine check %+v with nothing enrolled", c)
			}
		}
	}
	if node.Revision() <= before {
		t.Error("the database check wrote nothing")
	}
	if kv, _, err := store.Get(ctx, node, cluster.ReadinessPrefix+"cp1", store.Local); err != nil || kv == nil {
		t.Errorf("readiness record: %v %v", kv, err)
	}
	engines.running, engines.enrolled = 1, 2
	if r := s.Readiness(ctx, true, true); !r.Ready {
		t.Errorf("not ready with an engine running: %+v", r)
	}
}

// Two members: both healthy and in parity; a clusterId that is not this
// cluster's is refused; once the second member is gone the status says so
// and the parity audit fails on it.
func TestStatusAndParity(t *testing.T) {
	ctx := context.Background()
	founder, keys := storetest.WithKeys(t)
	put(t, founder, cluster.IdentityKey, cluster.Identity{ClusterID: "c-1", CreatedAt: time.Now()})
	second := join(t, founder, keys, "cp2")
	for i := range 5 {
		put(t, founder, "/test/k", i)
	}
	s := cluster.New(cluster.Deps{Node: founder, NodeID: "cp1"})

	if _, err := s.Status(ctx, "another"); !errors.Is(err, cluster.ErrUnknownCluster) {
		t.Errorf("status of another cluster: %v", err)
	}
	if _, err := s.Parity(ctx, cluster.ParityOptions{ClusterID: "another"}); !errors.Is(err, cluster.ErrUnknownCluster) {
		t.Errorf("parity of another cluster: %v", err)
	}

	// The second member applies what the founder wrote.
	testkit.Eventually(t, 30*time.Second, "both members healthy", func() bool {
		st, err := s.Status(ctx, "c-1")
		if err != nil || len(st.Members) != 2 {
			return false
		}
		for _, m := range st.Members {
			if m.Health.Status != cluster.OK || m.Health.LagEntries != 0 {
				return false
			}
		}
		return true
	})
	st, _ := s.Status(ctx, "")
	if st.ClusterID != "c-1" || st.LeaderID != "cp1" || st.Revision != founder.Revision() {
		t.Errorf("status %+v", st)
	}
	for _, m := range st.Members {
		if m.Self != (m.NodeID == "cp1") || m.Leader != (m.NodeID == "cp1") || !m.Health.Reachable || m.Suffrage != "Voter" {
			t.Errorf("member %+v", m)
		}
	}

	var p cluster.Parity
	testkit.Eventually(t, 30*time.Second, "a passing parity audit", func() bool {
		var err error
		p, err = s.Parity(ctx, cluster.ParityOptions{CheckDatabase: true})
		return err == nil && p.Passed
	})
	if p.ComparedRevision < 6 || len(p.Members) != 2 || p.Members[0].StateHash == "" || p.Members[0].StateHash != p.Members[1].StateHash {
		t.Errorf("parity %+v", p)
	}
	checked := map[string]int{}
	for _, c := range p.Checks {
		checked[c.Name]++
		if !c.Passed {
			t.Errorf("check %+v failed", c)
		}
	}
	if checked["state-hash"] != 2 || checked["member-reachable"] != 2 || checked["database-integrity"] != 1 {
		t.Errorf("checks %v", checked)
	}

	second.Kill()
	st, err := s.Status(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		if m.NodeID == "cp2" && (m.Health.Reachable || m.Health.Status != cluster.Unavailable) {
			t.Errorf("a stopped member: %+v", m)
		}
	}
	p, err = s.Parity(ctx, cluster.ParityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failed := false
	for _, c := range p.Checks {
		failed = failed || (c.Name == "member-reachable" && c.NodeID == "cp2" && !c.Passed && c.Severity == cluster.Error)
	}
	if p.Passed || !failed {
		t.Errorf("parity with a stopped member: %+v", p)
	}
}
