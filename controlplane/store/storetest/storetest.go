// Package storetest gives domain packages' tests a real replicated store:
// a single-node raft cluster on loopback with their index tables, closed
// when the test ends.
package storetest

import (
	"net"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

// SingleNode opens a founding node and returns once it leads.
func SingleNode(t testing.TB, specs ...sqlitefsm.IndexSpec) *raftnode.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	n, err := raftnode.Open(raftnode.Config{NodeID: "cp1", DataDir: t.TempDir(), RaftBind: addr, LinkKeys: [][]byte{make([]byte, 32)},
		Bootstrap: true, IndexSpecs: specs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown() })
	for deadline := time.Now().Add(20 * time.Second); !n.Leadership().IsLeader(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the single node did not become leader")
		}
	}
	return n
}
