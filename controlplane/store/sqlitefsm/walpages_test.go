package sqlitefsm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
)

// measure is MeasureWAL for a test.
func (h *harness) measure(step func()) WALPages {
	h.t.Helper()
	w, err := h.s.MeasureWAL(step)
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

// batch applies one raft batch of single-put Txns.
func (h *harness) batch(keys []string, value []byte) {
	var es []Entry
	for _, k := range keys {
		req := store.TxnRequest{Then: []store.Op{store.Put(k, value)}}
		d, _ := Command{Kind: CommandTxn, Txn: &req}.Encode()
		h.index++
		es = append(es, Entry{Index: h.index, Data: d})
	}
	h.s.ApplyBatch(es)
}

// The pages a Txn writes, per b-tree: a put writes its kv leaf and the
// last revisions page and nothing else; an indexed record writes its index
// b-trees only when created, or for the columns whose value changed.
func TestPagesWrittenPerTxn(t *testing.T) {
	cols := []IndexColumn{{Name: "state", Type: "TEXT", Path: "$.state"}, {Name: "flag", Type: "INTEGER", Path: "$.flag", NoIndex: true}}
	for i := 0; i < 10; i++ {
		cols = append(cols, IndexColumn{Name: fmt.Sprintf("c%d", i), Type: "TEXT", Path: fmt.Sprintf("$.f%d", i)})
	}
	h := newHarness(t, IndexSpec{Name: "rec", Prefix: "/rec/", Columns: cols})
	record := func(i int, state string) []byte {
		var b strings.Builder
		fmt.Fprintf(&b, `{"state":%q,"flag":1`, state)
		for j := 0; j < 10; j++ {
			fmt.Fprintf(&b, `,"f%d":"value-%d-%d"`, j, i, j)
		}
		return []byte(b.String() + "}")
	}
	for i := 0; i < 2000; i++ {
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(fmt.Sprintf("/rec/%05d", i), record(i, "a")), store.Put(fmt.Sprintf("/plain/%05d", i), []byte(strings.Repeat("p", 200)))}})
	}
	put := func(key string, value []byte) func() {
		return func() { h.txn(store.TxnRequest{Then: []store.Op{store.Put(key, value)}}) }
	}
	cases := []struct {
		name string
		step func()
		// most frames in total (a revisions page filling up adds a page and
		// the database header now and then), and b-trees it must not touch
		max    int
		absent []string
	}{
		{"update of a plain key", put("/plain/00100", []byte(strings.Repeat("q", 200))), 4, nil},
		{"new plain key", put("/plain/x", []byte("x")), 6, nil},
		{"record rewritten unchanged", put("/rec/00100", record(100, "a")), 4, []string{"idx_rec", "idx_rec_state", "idx_rec_c0"}},
		{"record with one indexed column changed", put("/rec/00100", record(100, "b")), 7, []string{"idx_rec_c0", "idx_rec_c9"}},
		{"new record: one entry per indexed column, none for NoIndex", put("/rec/new", record(9999, "a")), 22, []string{"idx_rec_flag"}},
	}
	for _, tc := range cases {
		w := h.measure(tc.step)
		t.Logf("%s: %s", tc.name, w)
		if w.Total > tc.max || w.Commits != 1 {
			t.Errorf("%s: %d frames in %d commits, want at most %d in one", tc.name, w.Total, w.Commits, tc.max)
		}
		for _, b := range tc.absent {
			if w.Frames[b] != 0 {
				t.Errorf("%s: wrote %d pages of %s", tc.name, w.Frames[b], b)
			}
		}
		if w.Frames["kv"] == 0 || w.Frames["revisions"] == 0 {
			t.Errorf("%s: no kv or revisions page: the measurement missed the write", tc.name)
		}
	}
	// The store benchmark's shape: batches of 20 puts of 200 bytes to
	// distinct keys, one kv leaf each at most plus the revisions they share.
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprintf("/plain/%05d", i*97)
	}
	w := h.measure(func() { h.batch(keys, []byte(strings.Repeat("r", 200))) })
	t.Logf("batch of 20 updates: %s", w)
	if w.Frames["kv"] > 20 || w.Total > 28 {
		t.Errorf("a batch of 20 updates wrote %d frames", w.Total)
	}
}
