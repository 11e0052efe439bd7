package faults

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// verifyEverywhere reads every acknowledged channel on every node, after a
// linearizable read made each node catch up.
func (w *writers) verifyEverywhere(t *testing.T, c *cluster) {
	t.Helper()
	for _, n := range c.nodes {
		testkit.Eventually(t, 30*time.Second, n.id+" catching up", func() bool {
			st, _, _ := do(n.url(), c.token, "GET", "/api/v2/channels?pageSize=1", nil, map[string]string{"X-Svc-Consistency": "linearizable"})
			return st == 200
		})
		w.verify(t, c, n)
	}
}

// The leader is killed (SIGKILL) while clients write through every node: a
// new leader takes over, the writes go on, and when the old leader is back
// every acknowledged write is on every node.
func TestLeaderKilledUnderWriteLoad(t *testing.T) {
	c := newCluster(t, 3, nil)
	w := startWriters(c, c.nodes, 3, "lk")
	for round := 0; round < rounds(2, 10); round++ {
		time.Sleep(2 * time.Second)
		old := c.leader()
		before := w.count()
		old.kill()
		killed := time.Now()
		testkit.Eventually(t, 30*time.Second, "writes going on without the old leader", func() bool { return w.count() >= before+20 })
		t.Logf("round %d: %s killed; writes went on after %s", round, old.id, time.Since(killed).Round(100*time.Millisecond))
		old.start()
		c.waitServing(old)
	}
	w.halt()
	w.verifyEverywhere(t, c)
	t.Logf("%d acknowledged writes on every node; other answers %v", len(w.acked), w.answers)
}

// Every node is killed at once under write load; after the restart no
// acknowledged write is missing.
func TestAllNodesKilledLoseNoAcknowledgedWrite(t *testing.T) {
	c := newCluster(t, 3, nil)
	for round := 0; round < rounds(1, 5); round++ {
		w := startWriters(c, c.nodes, 3, fmt.Sprintf("all%d", round))
		testkit.Eventually(t, 30*time.Second, "writes", func() bool { return w.count() >= 60 })
		for _, n := range c.nodes {
			n.signal(syscall.SIGKILL)
		}
		for _, n := range c.nodes {
			<-n.done
		}
		w.halt()
		for _, n := range c.nodes {
			n.start()
		}
		for _, n := range c.nodes {
			c.waitServing(n)
		}
		w.verifyEverywhere(t, c)
		t.Logf("round %d: %d acknowledged writes survived killing every node", round, len(w.acked))
	}
}

// The regression of raft-wal's tail truncation (v0.4.0): a leader holding
// an entry its followers never got is killed; the others elect a leader
// and move on; the old leader restarts and clears the entry from its log,
// is stopped cleanly, and must start again.
func TestLeaderRestartsAfterItsLogSuffixWasCleared(t *testing.T) {
	c := newCluster(t, 3, nil)
	for i := 0; i < 10; i++ {
		if st, _, body := c.createChannel(c.nodes[i%3], fmt.Sprintf("pre-%d", i)); st != 200 {
			t.Fatalf("create: %d %s", st, body)
		}
	}
	old := c.leader()
	var followers []*node
	for _, n := range c.nodes {
		if n != old {
			followers = append(followers, n)
			n.kill()
		}
	}
	// The leader appends this write to its log but cannot commit it (with
	// the followers merely stopped, the kernel would still take the
	// entry into their sockets and hand it over when they go on).
	st, _, body := c.createChannel(old, "unreplicated")
	if st == 200 {
		t.Fatalf("a write without a quorum was acknowledged: %s", body)
	}
	old.kill()
	for _, n := range followers {
		n.start()
	}
	for _, n := range followers {
		c.waitServing(n)
	}
	for i := 0; i < 10; i++ {
		testkit.Eventually(t, 30*time.Second, "a write to the new leader", func() bool {
			st, _, _ := c.createChannel(followers[i%2], fmt.Sprintf("post-%d", i))
			return st == 200
		})
	}
	old.start()
	c.waitServing(old)
	testkit.Eventually(t, 30*time.Second, "the old leader clearing its log suffix", func() bool { return strings.Contains(old.log(), "clearing log suffix") })
	old.stop()
	old.start()
	c.waitServing(old)
	st, _, body = do(old.url(), c.token, "GET", "/api/v2/channels?pageSize=100", nil, map[string]string{"X-Svc-Consistency": "linearizable"})
	if st != 200 || strings.Contains(string(body), `"unreplicated"`) || !strings.Contains(string(body), `"post-9"`) {
		t.Fatalf("the restarted node's channels: %d %s", st, body)
	}
}

// A node whose store data cannot be read says so in one line naming the
// recovery, and `svc rejoin` recovers it: the old membership goes, the data
// is moved aside, the key stays, and the node joins again with all data.
func TestRejoinRecoversANodeWithUnreadableData(t *testing.T) {
	c := newCluster(t, 3, nil)
	n3 := c.nodes[2]
	var ids []string
	for i := 0; i < 10; i++ {
		st, ch, body := c.createChannel(c.nodes[i%3], fmt.Sprintf("r-%d", i))
		if st != 200 {
			t.Fatalf("create: %d %s", st, body)
		}
		ids = append(ids, ch.ChannelID)
	}
	n3.stop()
	for i := 0; i < 5; i++ {
		st, ch, body := c.createChannel(c.nodes[0], fmt.Sprintf("while-down-%d", i))
		if st != 200 {
			t.Fatalf("create: %d %s", st, body)
		}
		ids = append(ids, ch.ChannelID)
	}
	// Damage the state database.
	db := filepath.Join(n3.dataDir, "state.db")
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte(strings.Repeat("garbage!", 16)), 0)
	f.Close()

	n3.start()
	select {
	case <-n3.done:
	case <-time.After(30 * time.Second):
		t.Fatal("a node with an unreadable database keeps running")
	}
	var lines []string
	for _, l := range strings.Split(n3.log(), "\n") {
		if strings.Contains(l, "svc rejoin") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "state database") || strings.Contains(n3.log(), "panic") {
		t.Fatalf("want one line naming the unreadable state database and svc rejoin, got %q", lines)
	}

	args := append([]string{"rejoin"}, n3.args[1:]...) // the node's own flags, --join included
	out, err := exec.Command(svcbin.Build(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("svc rejoin: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "rejoined") {
		t.Fatalf("svc rejoin said:\n%s", out)
	}
	if aside, _ := filepath.Glob(filepath.Join(n3.dataDir, "unreadable-*", "state.db")); len(aside) != 1 {
		t.Fatalf("the old data was not moved aside: %v", aside)
	}
	n3.start()
	c.waitServing(n3)
	for _, id := range ids {
		if st, _, _ := c.getChannel(n3, id, map[string]string{"X-Svc-Consistency": "linearizable"}); st != 200 {
			t.Fatalf("channel %s on the rejoined node: %d", id, st)
		}
	}
	st, _, body := do(c.nodes[0].url(), c.token, "GET", "/api/v2/cluster/status", nil, nil)
	var status struct {
		Members []struct {
			NodeID string `json:"nodeId"`
		} `json:"members"`
	}
	json.Unmarshal(body, &status)
	if st != 200 || len(status.Members) != 3 {
		t.Fatalf("cluster status after the rejoin: %d %s", st, body)
	}
	if st, _, body := c.createChannel(n3, "after-rejoin"); st != 200 {
		t.Fatalf("a write through the rejoined node: %d %s", st, body)
	}
}
