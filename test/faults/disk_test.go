package faults

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
	"github.com/svcplatform/svc/test/testkit"
)

// writers creates channels through the given nodes until stop closes,
// recording every acknowledged one and every answer that was not 200.
type writers struct {
	mu      sync.Mutex
	acked   map[string]string // channel id -> stream
	answers map[string]int    // "status code" -> count
	resets  atomic.Int64      // transport errors: connection refused or reset
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startWriters(c *cluster, nodes []*node, per int, name string) *writers {
	w := &writers{acked: map[string]string{}, answers: map[string]int{}, stop: make(chan struct{})}
	for i, n := range nodes {
		for j := 0; j < per; j++ {
			w.wg.Add(1)
			go func(n *node, id int) {
				defer w.wg.Done()
				for seq := 0; ; seq++ {
					select {
					case <-w.stop:
						return
					default:
					}
					stream := fmt.Sprintf("%s-%d-%d", name, id, seq)
					st, ch, body := c.createChannel(n, stream)
					w.mu.Lock()
					switch st {
					case 200:
						w.acked[ch.ChannelID] = stream
					case 0:
						w.resets.Add(1)
						w.answers["transport error"]++
					default:
						var e errorBody
						jsonUnmarshal(body, &e)
						w.answers[fmt.Sprintf("%d %s", st, e.Code)]++
					}
					w.mu.Unlock()
					if st != 200 {
						time.Sleep(20 * time.Millisecond)
					}
				}
			}(n, i*per+j)
		}
	}
	return w
}

func (w *writers) halt() {
	close(w.stop)
	w.wg.Wait()
}

func (w *writers) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// verify reads every acknowledged channel back through n.
func (w *writers) verify(t *testing.T, c *cluster, n *node) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, stream := range w.acked {
		st, _, ch := c.getChannel(n, id, nil)
		if st != 200 || ch.Stream != stream {
			t.Fatalf("acknowledged channel %s (%s) reads %d %+v on %s", id, stream, st, ch, n.id)
		}
	}
}

// A node on a 20 MiB volume starts (its raft log segments and reserve are
// sized from the volume), refuses writes with 507 storage_full once below
// its reserve while reads, health and readiness go on, survives the volume
// filling up completely under write load, and takes writes again once space
// is freed, without a restart and without losing an acknowledged write.
//
// Each round (five under make soak) starts a fresh node on a fresh volume:
// the writes of a round fill a good part of 20 MiB with real data.
func TestDiskFullOnOneNode(t *testing.T) {
	for round := 0; round < rounds(1, 5); round++ {
		vol := tmpfs(t, 20)
		c := newCluster(t, 1, func(int) string { return filepath.Join(vol, "data") })
		n := c.nodes[0]
		_, h := c.health(n)
		status, msg := h.check("storage")
		if status != "ok" || !strings.Contains(msg, "writes are refused below 4.0 MiB") {
			t.Fatalf("storage check on a fresh 20 MiB volume: %s %q", status, msg)
		}
		w := startWriters(c, c.nodes, 4, fmt.Sprintf("r%d", round))
		testkit.Eventually(t, 30*time.Second, "a few acknowledged writes", func() bool { return w.count() >= 20 })

		// Below the reserve: refused up front, retryable, nothing else breaks.
		// 3 MiB: below the 4 MiB reserve, above what the raft log keeps
		// for a new segment (1 MiB + 1 MiB), so the node keeps leading.
		// The node gives space back as it goes (an idle WAL is emptied),
		// so the fillers top the volume up to that level.
		var fillers []string
		below := func() {
			if freeBytes(t, vol) > 3<<20+512<<10 {
				fillers = append(fillers, fill(t, vol, 3<<20))
			}
		}
		testkit.Eventually(t, 10*time.Second, "writes refused with 507 storage_full", func() bool {
			below()
			st, _, body := c.createChannel(n, fmt.Sprintf("probe-%d-%d", round, time.Now().UnixNano()))
			if st != 507 {
				return false
			}
			e := decodeError(t, body)
			return e.Code == "storage_full" && e.Retryable != nil && *e.Retryable
		})
		below()
		st, h := c.health(n)
		status, msg = h.check("storage")
		// The node's own writes (a new raft segment among them) can take
		// the last 2 MiB meanwhile; then it cannot append and rightly says
		// unavailable (503), still naming the storage condition.
		tight := st == 503 && h.Status == "unavailable" && freeBytes(t, vol) < 2<<20+512<<10
		if (st != 200 || h.Status != "degraded") && !tight || status != "degraded" || !strings.Contains(msg, "storage_full") {
			t.Fatalf("health below the reserve: %d %s, storage %s %q", st, h.Status, status, msg)
		}
		// Readiness answers, not ready (503), and says why.
		below()
		st, _, body := do(n.url(), c.token, "GET", "/api/v2/system/readiness", nil, nil)
		if st != 503 || !strings.Contains(string(body), "storage_full") || !strings.Contains(string(body), `"ready":false`) {
			t.Fatalf("readiness below the reserve: %d %s", st, body)
		}

		// Completely full, with the writers still going: the node stays up
		// and answers; whatever it had applied stays readable.
		for _, f := range fillers {
			os.Remove(f)
		}
		filler := fill(t, vol, 0)
		time.Sleep(3 * time.Second)
		if !n.running() {
			t.Fatalf("the node died on a full disk: %v", n.exitErr)
		}
		if st, _ := c.health(n); st != 200 && st != 503 {
			t.Fatalf("health on a full disk: %d", st)
		}
		before := w.count()

		// Space is back: writes resume by themselves.
		os.Remove(filler)
		eventuallyOr(t, 60*time.Second, "writes resuming after space was freed", func() bool { return w.count() >= before+20 }, func() string {
			return fmt.Sprintf("%d bytes free; files:\n%s", freeBytes(t, vol), listFiles(vol))
		})
		w.halt()
		if !n.running() {
			t.Fatalf("the node exited: %v", n.exitErr)
		}
		if w.resets.Load() > 0 {
			t.Errorf("%d requests ended in a transport error (connection refused or reset)", w.resets.Load())
		}
		w.verify(t, c, n)
		if strings.Contains(n.log(), "panic") {
			t.Fatalf("the node panicked:\n%s", tail(n.log(), 4000))
		}
		t.Logf("round %d: %d acknowledged writes; other answers %v", round, len(w.acked), w.answers)
		n.stop()
	}
}

// The state machine on a volume that is full: the batch halts (reported,
// with the disk named as the cause) instead of panicking or skipping, and is
// applied, every entry of it, once space is freed.
func TestApplyHaltsOnAFullDiskAndResumes(t *testing.T) {
	vol := tmpfs(t, 8)
	s, err := sqlitefsm.Open(filepath.Join(vol, "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entry := func(i uint64, key string, size int) sqlitefsm.Entry {
		req := store.TxnRequest{Then: []store.Op{store.Put(key, bytes.Repeat([]byte("v"), size))}}
		d, _ := sqlitefsm.Command{Kind: sqlitefsm.CommandTxn, Txn: &req}.Encode()
		return sqlitefsm.Entry{Index: i, Data: d}
	}
	s.ApplyBatch([]sqlitefsm.Entry{entry(1, "/before", 100)})
	filler := fill(t, vol, 0)
	done := make(chan []any, 1)
	go func() {
		done <- s.ApplyBatch([]sqlitefsm.Entry{entry(2, "/a", 300000), entry(3, "/b", 300000)})
	}()
	testkit.Eventually(t, 10*time.Second, "the apply reporting a full disk", func() bool {
		_, err := s.Stalled()
		return err != nil && sqlitefsm.IsDiskFull(err)
	})
	select {
	case <-done:
		t.Fatal("the batch returned while the disk is full")
	case <-time.After(500 * time.Millisecond):
	}
	if s.AppliedIndex() != 1 {
		t.Fatalf("applied index %d on a full disk", s.AppliedIndex())
	}
	os.Remove(filler)
	select {
	case res := <-done:
		for i, r := range res {
			if _, ok := r.(*store.TxnResponse); !ok {
				t.Fatalf("entry %d: %v", i+2, r)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the batch was not applied after space was freed")
	}
	if s.AppliedIndex() != 3 || s.Revision() != 3 {
		t.Fatalf("after resuming: applied %d, revision %d", s.AppliedIndex(), s.Revision())
	}
	if _, err := s.Stalled(); err != nil {
		t.Fatalf("still stalled: %v", err)
	}
}

// A follower of three runs out of disk: the cluster goes on taking writes
// through the other two; the follower refuses the writes sent to it with
// 507, keeps answering reads, and catches up with everything once its space
// is freed.
func TestDiskFullOnAFollowerOfThree(t *testing.T) {
	vols := []string{tmpfs(t, 40), tmpfs(t, 40), tmpfs(t, 40)}
	c := newCluster(t, 3, func(i int) string { return filepath.Join(vols[i], "data") })
	leader := c.leader()
	var full *node
	var others []*node
	var fullVol string
	for i, n := range c.nodes {
		if n != leader && full == nil {
			full, fullVol = n, vols[i]
		} else {
			others = append(others, n)
		}
	}
	st, before, body := c.createChannel(full, "before-full")
	if st != 200 {
		t.Fatalf("write through %s before the disk filled: %d %s", full.id, st, body)
	}
	for round := 0; round < rounds(1, 4); round++ {
		w := startWriters(c, others, 3, fmt.Sprintf("f%d", round))
		filler := fill(t, fullVol, 0)
		start := w.count()
		testkit.Eventually(t, 30*time.Second, "writes through the other two going on", func() bool { return w.count() >= start+30 })
		st, _, body := c.createChannel(full, fmt.Sprintf("on-full-%d", round))
		if st != 507 || decodeError(t, body).Code != "storage_full" {
			t.Fatalf("a write through the full follower: %d %s", st, body)
		}
		if st, _, ch := c.getChannel(full, before.ChannelID, nil); st != 200 || ch.Stream != "before-full" {
			t.Fatalf("a read on the full follower: %d", st)
		}
		if st, h := c.health(full); st != 200 || h.Status != "degraded" {
			t.Fatalf("health of the full follower: %d %s", st, h.Status)
		}
		if !full.running() {
			t.Fatalf("the follower died on a full disk: %v", full.exitErr)
		}
		os.Remove(filler)
		w.halt()
		testkit.Eventually(t, 60*time.Second, "writes through the follower resuming", func() bool {
			st, _, _ := c.createChannel(full, fmt.Sprintf("after-full-%d-%d", round, time.Now().UnixNano()))
			return st == 200
		})
		// The follower caught up with every write made while it was full.
		testkit.Eventually(t, 60*time.Second, "the follower catching up", func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			for id := range w.acked {
				if st, _, _ := c.getChannel(full, id, nil); st != 200 {
					return false
				}
			}
			return true
		})
		w.verify(t, c, full)
		if w.resets.Load() > 0 {
			t.Errorf("%d writes through the healthy nodes ended in a transport error", w.resets.Load())
		}
		t.Logf("round %d: %d writes acknowledged while %s was full; other answers %v", round, len(w.acked), full.id, w.answers)
	}
}
