// Package storetest gives domain packages' tests a real replicated store:
// a single-node raft cluster on loopback with their index tables, closed
// when the test ends.
package storetest

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

// SingleNode opens a founding node and returns once it leads.
func SingleNode(t testing.TB, specs ...sqlitefsm.IndexSpec) *raftnode.Node {
	t.Helper()
	n, _ := WithKeys(t, specs...)
	return n
}

// WithKeys opens a founding node with a fresh cluster keyring (for
// packages that seal secrets) and returns both once the node leads.
func WithKeys(t testing.TB, specs ...sqlitefsm.IndexSpec) (*raftnode.Node, *keyring.Keyring) {
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
	n, err := raftnode.Open(raftnode.Config{NodeID: "cp1", DataDir: dir, RaftBind: addr, LinkKeys: keys.LinkKeys(),
		Bootstrap: true, IndexSpecs: specs, Logger: zaptest.NewLogger(t).Named("store")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown() })
	for deadline := time.Now().Add(20 * time.Second); !n.Leadership().IsLeader(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the single node did not become leader")
		}
	}
	return n, keys
}
