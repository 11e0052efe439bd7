package raftnode

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/store"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

type testCluster struct {
	t     *testing.T
	nodes map[string]*Node
	dirs  map[string]string
	addrs map[string]string
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (c *testCluster) start(id string, bootstrap bool, tune func(*Config)) *Node {
	c.t.Helper()
	if _, ok := c.dirs[id]; !ok {
		c.dirs[id] = c.t.TempDir()
		c.addrs[id] = freeAddr(c.t)
	}
	cfg := Config{
		NodeID: id, DataDir: c.dirs[id], RaftBind: c.addrs[id], LinkKeys: [][]byte{testKey},
		Bootstrap: bootstrap, Logger: zaptest.NewLogger(c.t).Named(id),
	}
	if tune != nil {
		tune(&cfg)
	}
	var n *Node
	var err error
	for i := 0; i < 50; i++ { // a just-closed port may linger briefly
		if n, err = Open(cfg); err == nil {
			break
		}
		c.t.Logf("open %s: %v", id, err)
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = n
	c.t.Cleanup(func() { n.Kill() })
	return n
}

func newCluster(t *testing.T, size int, tune func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, nodes: map[string]*Node{}, dirs: map[string]string{}, addrs: map[string]string{}}
	first := c.start("n1", true, tune)
	c.waitLeader(10 * time.Second)
	for i := 2; i <= size; i++ {
		id := "n" + strconv.Itoa(i)
		n := c.start(id, false, tune)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := first.Join(ctx, JoinRequest{NodeID: id, RaftAddress: n.RaftAddress(), HTTPAddress: "http://" + id}); err != nil {
			cancel()
			t.Fatalf("join %s: %v", id, err)
		}
		cancel()
	}
	return c
}

func (c *testCluster) waitLeader(timeout time.Duration) *Node {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range c.nodes {
			if n.Leadership().IsLeader() {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no leader within %s", timeout)
	return nil
}

func (c *testCluster) follower() *Node {
	for _, n := range c.nodes {
		if !n.Leadership().IsLeader() {
			return n
		}
	}
	return nil
}

func put(ctx context.Context, s store.Store, key, val string) (*store.TxnResponse, error) {
	return s.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(key, []byte(val))}})
}

func TestWritesThroughAnyNodeAndReadYourWrites(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for id, n := range c.nodes {
		for i := 0; i < 20; i++ {
			key := fmt.Sprintf("/ryw/%s/%d", id, i)
			resp, err := put(ctx, n, key, "v")
			if err != nil {
				t.Fatalf("write via %s: %v", id, err)
			}
			// The node that answered must already show the write locally.
			kv, rev, err := store.Get(ctx, n, key, store.Local)
			if err != nil || kv == nil || rev < resp.Header.Revision {
				t.Fatalf("read-your-writes on %s: kv=%v rev=%d want>=%d err=%v", id, kv, rev, resp.Header.Revision, err)
			}
		}
	}
	// Linearizable reads from a follower see the latest write made elsewhere.
	leader := c.waitLeader(5 * time.Second)
	f := c.follower()
	for i := 0; i < 20; i++ {
		if _, err := put(ctx, leader, "/lin", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		kv, _, err := store.Get(ctx, f, "/lin", store.Linearizable)
		if err != nil || string(kv.Value) != strconv.Itoa(i) {
			t.Fatalf("linearizable read on follower = %v, %v", kv, err)
		}
	}
	// Bad requests are refused before consensus and change nothing.
	rev := f.Revision()
	if _, err := f.Txn(ctx, store.TxnRequest{Then: []store.Op{{Type: store.OpPut, Key: ""}}}); !errors.Is(err, store.ErrInvalidRequest) {
		t.Fatalf("invalid txn: %v", err)
	}
	if f.Revision() != rev {
		t.Fatal("invalid txn changed the revision")
	}
}

// kvInput is one operation of the linearizability history.
type kvInput struct {
	put   bool
	key   string
	value string
}

var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(kvInput)
		if in.put {
			return true, in.value
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(kvInput)
		if in.put {
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		}
		return fmt.Sprintf("get(%s) -> %v", in.key, output)
	},
}

func TestLeaderKilledWhileClientsWrite(t *testing.T) {
	c := newCluster(t, 3, nil)
	leader := c.waitLeader(10 * time.Second)
	var survivors []*Node
	for _, n := range c.nodes {
		if n != leader {
			survivors = append(survivors, n)
		}
	}
	nodes := append([]*Node{leader}, survivors...)

	start := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for client := 0; client < 8; client++ {
		wg.Add(1)
		go func(client int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(client)))
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				n := nodes[rng.Intn(len(nodes))]
				key := fmt.Sprintf("/lin/%d", rng.Intn(4))
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				call := time.Since(start).Nanoseconds()
				if rng.Intn(10) < 6 {
					val := fmt.Sprintf("c%d-%d", client, seq)
					ackKey := fmt.Sprintf("/ack/%d/%d", client, seq)
					_, err := n.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(key, []byte(val)), store.Put(ackKey, []byte(val))}})
					ret := time.Since(start).Nanoseconds()
					op := porcupine.Operation{ClientId: client, Input: kvInput{put: true, key: key, value: val}, Call: call, Return: ret}
					if err != nil {
						op.Return = math.MaxInt64 // may or may not have happened
					}
					mu.Lock()
					history = append(history, op)
					if err == nil {
						acked[ackKey] = true
					}
					mu.Unlock()
				} else {
					kv, _, err := store.Get(ctx, n, key, store.Linearizable)
					ret := time.Since(start).Nanoseconds()
					if err == nil {
						out := ""
						if kv != nil {
							out = string(kv.Value)
						}
						mu.Lock()
						history = append(history, porcupine.Operation{ClientId: client, Input: kvInput{key: key}, Output: out, Call: call, Return: ret})
						mu.Unlock()
					}
				}
				cancel()
			}
		}(client)
	}
	time.Sleep(1500 * time.Millisecond)
	killedAt := time.Now()
	leader.Kill()
	// A new leader must be elected among the survivors within 3 s.
	var newLeader *Node
	for time.Since(killedAt) < 3*time.Second && newLeader == nil {
		for _, n := range survivors {
			if n.Leadership().IsLeader() {
				newLeader = n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if newLeader == nil {
		t.Fatalf("no new leader within 3s of killing %s", leader.NodeID())
	}
	t.Logf("new leader %s after %s", newLeader.NodeID(), time.Since(killedAt))
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()

	// Every acknowledged write is on every surviving node.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, n := range survivors {
		if err := n.LinearizableBarrier(ctx); err != nil {
			t.Fatal(err)
		}
		for key := range acked {
			kv, _, err := store.Get(ctx, n, key, store.Local)
			if err != nil || kv == nil {
				t.Fatalf("acknowledged write %s missing on %s (%v)", key, n.NodeID(), err)
			}
		}
	}
	if len(acked) < 50 {
		t.Fatalf("only %d writes acknowledged; the test did not exercise the cluster", len(acked))
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel, history, 60*time.Second)
	if res != porcupine.Ok {
		dumpHistory(t, history)
		_ = info
		t.Fatalf("history of %d operations is not linearizable (result %v)", len(history), res)
	}
	t.Logf("%d operations, %d acknowledged writes, linearizable", len(history), len(acked))
}

func TestLaggingNodeCatchesUpBySnapshot(t *testing.T) {
	tune := func(c *Config) {
		c.SnapshotThreshold = 1024
		c.TrailingLogs = 512
		c.SnapshotInterval = 200 * time.Millisecond
		c.WALSegmentSize = 32 << 10
	}
	c := newCluster(t, 3, tune)
	leader := c.waitLeader(10 * time.Second)
	lagger := c.follower()
	id := lagger.NodeID()
	lagger.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// More than 10,000 entries while it is down, in parallel batches.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 650; i++ {
				// A put of a value is safe to repeat: one cut short by a
				// change of leader (two voters on a loaded machine miss a
				// heartbeat now and then) is sent again; the node forwards
				// it to whoever leads.
				_, err := put(ctx, leader, fmt.Sprintf("/bulk/%d/%d", w, i%50), strconv.Itoa(i))
				for tries := 0; tries < 20 && (errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, store.ErrNoLeader)); tries++ {
					time.Sleep(100 * time.Millisecond)
					_, err = put(ctx, leader, fmt.Sprintf("/bulk/%d/%d", w, i%50), strconv.Itoa(i))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if leader.Raft().LastIndex() < 10000 {
		t.Fatalf("only %d entries written", leader.Raft().LastIndex())
	}
	// Let the leader snapshot and truncate its log past what the lagger has.
	deadline := time.Now().Add(30 * time.Second)
	for {
		first, _ := leader.wal.FirstIndex()
		if first > 5000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leader log not truncated (first index %d)", first)
		}
		time.Sleep(100 * time.Millisecond)
	}
	back := c.start(id, false, tune)
	want := leader.Revision()
	if err := back.WaitForRevision(ctx, want); err != nil {
		t.Fatalf("restarted node stuck at revision %d, want %d", back.Revision(), want)
	}
	if back.SnapshotRestores() == 0 {
		t.Fatal("node caught up without installing a snapshot")
	}
	if back.State().StateHash() == "" {
		t.Fatal("empty state hash")
	}
	lst := leader.LocalStatus(ctx, want)
	bst := back.LocalStatus(ctx, want)
	if lst.HashAtRevision == "" || lst.HashAtRevision != bst.HashAtRevision {
		t.Fatalf("state hash differs at revision %d: leader %q, restored %q", want, lst.HashAtRevision, bst.HashAtRevision)
	}
}

func TestJoinFourthAndRemoveNode(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := put(ctx, c.nodes["n2"], "/before-join", "x"); err != nil {
		t.Fatal(err)
	}
	// Join through a follower (chosen before n4 exists, so it is a member):
	// it forwards to the leader.
	via := c.follower()
	n4 := c.start("n4", false, nil)
	if err := via.Join(ctx, JoinRequest{NodeID: "n4", RaftAddress: n4.RaftAddress(), HTTPAddress: "http://n4"}); err != nil {
		t.Fatal(err)
	}
	if err := n4.WaitForRevision(ctx, c.nodes["n1"].Revision()); err != nil {
		t.Fatal(err)
	}
	if kv, _, _ := store.Get(ctx, n4, "/before-join", store.Local); kv == nil {
		t.Fatal("joined node lacks earlier data")
	}
	if _, err := put(ctx, n4, "/via-n4", "y"); err != nil {
		t.Fatalf("write through joined node: %v", err)
	}
	members, err := n4.Members(ctx)
	if err != nil || len(members) != 4 {
		t.Fatalf("members = %+v, %v", members, err)
	}
	// Joining again is a no-op; a bad id is refused.
	if err := via.Join(ctx, JoinRequest{NodeID: "n4", RaftAddress: n4.RaftAddress()}); err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	if err := via.Join(ctx, JoinRequest{NodeID: "bad id!", RaftAddress: "x:1"}); !errors.Is(err, ErrBadMember) {
		t.Fatalf("bad join: %v", err)
	}
	// Remove a follower that is not the one we query through.
	var victim string
	for id, n := range c.nodes {
		if id != "n4" && n != via && !n.Leadership().IsLeader() {
			victim = id
		}
	}
	if victim == "" {
		victim = "n4"
	}
	if err := n4.Remove(ctx, victim); err != nil {
		t.Fatal(err)
	}
	c.nodes[victim].Kill()
	members, _ = via.Members(ctx)
	if len(members) != 3 {
		t.Fatalf("after remove: %+v", members)
	}
	for _, m := range members {
		if m.NodeID == victim {
			t.Fatalf("%s still a member", victim)
		}
	}
	if _, err := put(ctx, via, "/after-remove", "z"); err != nil {
		t.Fatalf("write after removal: %v", err)
	}
}

func TestRestartKeepsState(t *testing.T) {
	c := newCluster(t, 1, nil)
	n := c.nodes["n1"]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 100; i++ {
		if _, err := put(ctx, n, fmt.Sprintf("/r/%d", i), strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	rev, hash := n.Revision(), n.State().StateHash()
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	n = c.start("n1", true, nil) // bootstrap is ignored with existing state
	c.waitLeader(10 * time.Second)
	if n.Revision() != rev || n.State().StateHash() != hash {
		t.Fatalf("after restart rev=%d hash=%s, want %d %s", n.Revision(), n.State().StateHash(), rev, hash)
	}
	resp, err := n.Range(ctx, "/r/", store.RangeOptions{End: store.PrefixEnd("/r/"), CountOnly: true, Consistency: store.Linearizable})
	if err != nil || resp.Count != 100 {
		t.Fatalf("count after restart = %v, %v", resp, err)
	}
	if _, err := put(ctx, n, "/r/after", "x"); err != nil || n.Revision() != rev+1 {
		t.Fatalf("write after restart: %v rev=%d", err, n.Revision())
	}
}

func TestInternalLinkRejectsWrongKey(t *testing.T) {
	c := newCluster(t, 1, nil)
	n := c.nodes["n1"]
	other, err := newLinkMux("127.0.0.1:0", "", [][]byte{[]byte("another-key-another-key-another-k")}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := other.dial(ctx, n.RaftAddress(), streamForward); err == nil {
		t.Fatal("a peer without the cluster key was accepted")
	}
	good, err := newLinkMux("127.0.0.1:0", "", [][]byte{testKey}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	conn, err := good.dial(ctx, n.RaftAddress(), streamForward)
	if err != nil {
		t.Fatalf("peer with the key refused: %v", err)
	}
	conn.Close()
}

func dumpHistory(t *testing.T, history []porcupine.Operation) {
	f, err := os.Create(filepath.Join(os.TempDir(), "porcupine-history.txt"))
	if err != nil {
		return
	}
	defer f.Close()
	for _, op := range history {
		in := op.Input.(kvInput)
		fmt.Fprintf(f, "%d %d %d %v %s %s %v\n", op.ClientId, op.Call, op.Return, in.put, in.key, in.value, op.Output)
	}
	t.Logf("history written to %s", f.Name())
}

// TestUpdateLosesNoIncrements runs concurrent read-modify-write increments
// through every node: each successful Update must be counted exactly once.
func TestUpdateLosesNoIncrements(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var nodes []*Node
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	var mu sync.Mutex
	succeeded, contended := 0, 0
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			n := nodes[w%len(nodes)]
			for i := 0; i < 10; i++ {
				_, err := store.Update(ctx, n, "/counter", func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
					v := 0
					if kv != nil {
						v, _ = strconv.Atoi(string(kv.Value))
					}
					return []byte(strconv.Itoa(v + 1)), nil, nil, nil
				})
				mu.Lock()
				switch {
				case err == nil:
					succeeded++
				case errors.Is(err, store.ErrContended):
					contended++
				default:
					mu.Unlock()
					t.Error(err)
					return
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	kv, _, err := store.Get(ctx, nodes[0], "/counter", store.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := strconv.Atoi(string(kv.Value)); got != succeeded || succeeded == 0 {
		t.Fatalf("counter %d, successful updates %d (contended %d)", got, succeeded, contended)
	}
	t.Logf("%d increments, %d gave up under contention", succeeded, contended)
}
