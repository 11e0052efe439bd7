package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/test/testkit"
)

// linkKey authenticates the loopback cluster's internal link.
var linkKey = []byte("storebench-link-key-32-bytes-ok!")

// storeTarget is a raftnode cluster of one or more nodes on loopback.
type storeTarget struct {
	dir    string
	nodes  []*raftnode.Node
	leader *raftnode.Node
	value  []byte
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startStore assembles a cluster the way the raftnode cluster tests do:
// bootstrap n1, wait until it leads, then join the others through it.
func startStore(size int) (_ *storeTarget, err error) {
	dir, err := os.MkdirTemp("", "storebench-store-*")
	if err != nil {
		return nil, err
	}
	t := &storeTarget{dir: dir, value: benchValue()}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	first, err := t.open("n1", true)
	if err != nil {
		return nil, err
	}
	if err := waitFor(10*time.Second, first.Leadership().IsLeader); err != nil {
		return nil, fmt.Errorf("n1 did not become leader: %w", err)
	}
	for i := 2; i <= size; i++ {
		id := "n" + strconv.Itoa(i)
		n, err := t.open(id, false)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = first.Join(ctx, raftnode.JoinRequest{NodeID: id, RaftAddress: n.RaftAddress(), HTTPAddress: "http://" + id})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("join %s: %w", id, err)
		}
	}
	for _, n := range t.nodes {
		if n.Leadership().IsLeader() {
			t.leader = n
		}
	}
	if t.leader == nil {
		return nil, errors.New("no leader after assembling the cluster")
	}
	// Let every follower catch up so the run starts from a steady state.
	last := t.leader.Raft().LastIndex()
	for _, n := range t.nodes {
		if err := waitFor(20*time.Second, func() bool { return n.Raft().AppliedIndex() >= last }); err != nil {
			return nil, fmt.Errorf("%s did not catch up: %w", n.NodeID(), err)
		}
	}
	return t, nil
}

func (t *storeTarget) open(id string, bootstrap bool) (*raftnode.Node, error) {
	var lastErr error
	for range 20 { // a port found free may be taken before we bind it
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		n, err := raftnode.Open(raftnode.Config{
			NodeID: id, DataDir: filepath.Join(t.dir, id), RaftBind: addr,
			LinkKeys: [][]byte{linkKey}, Bootstrap: bootstrap, Logger: zap.NewNop(),
		})
		if err == nil {
			t.nodes = append(t.nodes, n)
			return n, nil
		}
		lastErr = err
		os.RemoveAll(filepath.Join(t.dir, id))
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("open %s: %w", id, lastErr)
}

func (t *storeTarget) put(ctx context.Context, key string) error {
	_, err := t.leader.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(key, t.value)}})
	return err
}

func (t *storeTarget) serverPID() int { return 0 }

func (t *storeTarget) close() error {
	var errs []error
	if len(t.nodes) == 1 {
		errs = append(errs, t.nodes[0].Shutdown())
	} else {
		// The data is thrown away, so skip the leadership hand-off that
		// Shutdown would attempt towards peers that are stopping too.
		for _, n := range t.nodes {
			errs = append(errs, n.Kill())
		}
	}
	errs = append(errs, os.RemoveAll(t.dir))
	return errors.Join(errs...)
}

func waitFor(timeout time.Duration, cond func() bool) error {
	if !testkit.Within(timeout, cond) {
		return fmt.Errorf("timed out after %s", timeout)
	}
	return nil
}
