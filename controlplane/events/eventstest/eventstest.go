// Package eventstest gives tests of the event and webhook packages a real
// replicated store: a single-node raft cluster on loopback with the index
// tables they query, not a fake.
package eventstest

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// OpenNode starts a single-node store that is the ready leader, with a
// fresh keyring, and shuts it down when the test ends.
func OpenNode(t *testing.T, specs ...sqlitefsm.IndexSpec) (*raftnode.Node, *keyring.Keyring) {
	t.Helper()
	dir := t.TempDir()
	keys, err := keyring.LoadOrCreate(filepath.Join(dir, "cluster.key"), true)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	node, err := raftnode.Open(raftnode.Config{NodeID: "n1", DataDir: dir, RaftBind: addr, LinkKeys: keys.LinkKeys(), Bootstrap: true,
		IndexSpecs: specs, Logger: zaptest.NewLogger(t).Named("n1")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Shutdown() })
	deadline := time.Now().Add(10 * time.Second)
	for !node.Leadership().IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("the single node did not become leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return node, keys
}
