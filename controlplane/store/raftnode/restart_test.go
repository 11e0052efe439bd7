package raftnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/svcplatform/svc/controlplane/store"
)

// TestRestartAfterSuffixTruncation is the regression test for raft-wal's
// tail truncation (v0.4.0 sealed the truncated tail segment without an
// index block, and every later start panicked in raft.NewRaft with "sealed
// segment has no index block"). A leader is killed holding an entry no
// follower has; the others elect a leader and move on; the old leader
// restarts, clears its log suffix to follow them, is stopped cleanly and
// must start again with its data intact.
func TestRestartAfterSuffixTruncation(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	old := c.waitLeader(10 * time.Second)
	for i := 0; i < 20; i++ {
		if _, err := put(ctx, old, fmt.Sprintf("/before/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	var others []string
	for id, n := range c.nodes {
		if n != old {
			others = append(others, id)
			n.Kill()
		}
	}
	// The leader appends this entry to its own log but cannot commit it.
	commit := old.Raft().CommitIndex()
	wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := put(wctx, old, "/unreplicated", "lost")
	wcancel()
	if err == nil {
		t.Fatal("a write without a quorum was acknowledged")
	}
	if old.Raft().LastIndex() <= commit {
		t.Fatalf("the leader's log did not grow past its commit index %d", commit)
	}
	oldID := old.NodeID()
	old.Kill()

	for _, id := range others {
		c.start(id, false, nil)
	}
	var leader *Node
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && leader == nil; {
		for _, id := range others {
			if c.nodes[id].Leadership().IsLeader() {
				leader = c.nodes[id]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if leader == nil {
		t.Fatal("no leader among the survivors")
	}
	for i := 0; i < 50; i++ {
		if _, err := put(ctx, leader, fmt.Sprintf("/after/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}

	// The old leader rejoins as a follower and truncates its suffix.
	seen, logs := observer.New(zapcore.WarnLevel)
	back := c.start(oldID, false, func(cfg *Config) {
		cfg.Logger = zap.New(zapcore.NewTee(cfg.Logger.Core(), seen))
	})
	if err := back.WaitForRevision(ctx, leader.Revision()); err != nil {
		t.Fatalf("restarted node stuck at revision %d, want %d", back.Revision(), leader.Revision())
	}
	if logs.FilterMessage("clearing log suffix").Len() == 0 {
		t.Fatal("the restarted leader did not clear its log suffix; the test did not exercise tail truncation")
	}
	if kv, _, _ := store.Get(ctx, back, "/unreplicated", store.Local); kv != nil {
		t.Fatal("the unreplicated entry was applied")
	}
	if err := back.Shutdown(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(back.cfg)
	if err != nil {
		t.Fatalf("a cleanly stopped node does not start again after its log suffix was cleared: %v", err)
	}
	c.nodes[oldID] = again
	t.Cleanup(func() { again.Kill() })
	if _, err := put(ctx, leader, "/final", "v"); err != nil {
		t.Fatal(err)
	}
	if err := again.WaitForRevision(ctx, leader.Revision()); err != nil {
		t.Fatalf("node stuck at revision %d after its second start, want %d", again.Revision(), leader.Revision())
	}
}

// A raft log that cannot be read makes Open fail with ErrUnreadableData
// (raft.NewRaft panics on such a log; the node must not).
func TestUnreadableLogIsAnErrorNotAPanic(t *testing.T) {
	small := func(c *Config) { c.WALSegmentSize = 32 << 10 }
	c := newCluster(t, 1, small)
	n := c.nodes["n1"]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 400; i++ {
		if _, err := put(ctx, n, fmt.Sprintf("/k/%d", i), strings.Repeat("v", 200)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(c.dirs["n1"], "raft", "wal", "*.wal"))
	if len(segs) < 2 {
		t.Fatalf("want sealed segments, have %v", segs)
	}
	sort.Strings(segs)
	if err := os.Truncate(segs[0], 100); err != nil {
		t.Fatal(err)
	}
	cfg := n.cfg
	_, err := Open(cfg)
	if !errors.Is(err, ErrUnreadableData) || !strings.Contains(err.Error(), "raft log") {
		t.Fatalf("open of a damaged log: %v, want ErrUnreadableData naming the raft log", err)
	}
	// The failed open released everything: the data directory is free.
	release, err := LockDataDir(cfg.DataDir)
	if err != nil {
		t.Fatalf("data directory still locked after a failed open: %v", err)
	}
	release()
}

// Two nodes cannot run on one data directory.
func TestDataDirIsLocked(t *testing.T) {
	c := newCluster(t, 1, nil)
	cfg := c.nodes["n1"].cfg
	cfg.RaftBind = freeAddr(t)
	if _, err := Open(cfg); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second open: %v, want ErrDataDirInUse", err)
	}
}
