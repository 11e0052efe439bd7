package sqlitefsm

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// harness applies commands with increasing log indices, as raft would.
type harness struct {
	t     *testing.T
	s     *State
	index uint64
}

func newHarness(t *testing.T, specs ...IndexSpec) *harness {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"), specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &harness{t: t, s: s}
}

func (h *harness) apply(cmd Command) any {
	h.t.Helper()
	data, err := cmd.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	h.index++
	return h.s.ApplyBatch([]Entry{{Index: h.index, Data: data}})[0]
}

func (h *harness) txn(req store.TxnRequest) *store.TxnResponse {
	h.t.Helper()
	res := h.apply(Command{Kind: CommandTxn, Txn: &req})
	resp, ok := res.(*store.TxnResponse)
	if !ok {
		h.t.Fatalf("txn failed: %v", res)
	}
	return resp
}

func (h *harness) get(key string) *store.KeyValue {
	h.t.Helper()
	r, err := h.s.Range(context.Background(), key, store.RangeOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(r.KVs) == 0 {
		return nil
	}
	return r.KVs[0]
}

func TestCompareTargetsAndResults(t *testing.T) {
	h := newHarness(t)
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/a", []byte("m"))}}) // rev 1
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/b", []byte("x"))}}) // rev 2
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/a", []byte("n"))}}) // rev 3: /a version 2, create 1, mod 3

	cases := []struct {
		name string
		cmp  store.Compare
		want bool
	}{
		{"version equal", store.Compare{Key: "/a", Target: store.TargetVersion, Result: store.Equal, Number: 2}, true},
		{"version equal wrong", store.Compare{Key: "/a", Target: store.TargetVersion, Result: store.Equal, Number: 1}, false},
		{"version not equal", store.Compare{Key: "/a", Target: store.TargetVersion, Result: store.NotEqual, Number: 1}, true},
		{"version less", store.Compare{Key: "/a", Target: store.TargetVersion, Result: store.Less, Number: 3}, true},
		{"version less false", store.Compare{Key: "/a", Target: store.TargetVersion, Result: store.Less, Number: 2}, false},
		{"version greater", store.Compare{Key: "/a", Target: store.TargetVersion, Result: store.Greater, Number: 1}, true},
		{"create equal", store.Compare{Key: "/a", Target: store.TargetCreateRevision, Result: store.Equal, Number: 1}, true},
		{"create greater false", store.Compare{Key: "/a", Target: store.TargetCreateRevision, Result: store.Greater, Number: 1}, false},
		{"create less", store.Compare{Key: "/b", Target: store.TargetCreateRevision, Result: store.Less, Number: 3}, true},
		{"mod equal", store.Compare{Key: "/a", Target: store.TargetModRevision, Result: store.Equal, Number: 3}, true},
		{"mod not equal", store.Compare{Key: "/a", Target: store.TargetModRevision, Result: store.NotEqual, Number: 3}, false},
		{"mod less", store.Compare{Key: "/b", Target: store.TargetModRevision, Result: store.Less, Number: 3}, true},
		{"mod greater", store.Compare{Key: "/a", Target: store.TargetModRevision, Result: store.Greater, Number: 2}, true},
		{"value equal", store.Compare{Key: "/a", Target: store.TargetValue, Result: store.Equal, Value: []byte("n")}, true},
		{"value not equal", store.Compare{Key: "/a", Target: store.TargetValue, Result: store.NotEqual, Value: []byte("n")}, false},
		{"value less", store.Compare{Key: "/a", Target: store.TargetValue, Result: store.Less, Value: []byte("o")}, true},
		{"value greater", store.Compare{Key: "/a", Target: store.TargetValue, Result: store.Greater, Value: []byte("m")}, true},
		{"missing version is zero", store.Absent("/missing"), true},
		{"missing mod is zero", store.ModRevisionIs("/missing", 0), true},
		{"missing create greater false", store.Compare{Key: "/missing", Target: store.TargetCreateRevision, Result: store.Greater, Number: 0}, false},
		{"missing value never matches", store.Compare{Key: "/missing", Target: store.TargetValue, Result: store.NotEqual, Value: []byte("z")}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.s.Revision()
			resp := h.txn(store.TxnRequest{
				Compares: []store.Compare{tc.cmp},
				Then:     []store.Op{store.GetOp("/a")},
				Else:     []store.Op{store.GetOp("/b")},
			})
			if resp.Succeeded != tc.want {
				t.Fatalf("succeeded = %v, want %v", resp.Succeeded, tc.want)
			}
			wantKey := "/b"
			if tc.want {
				wantKey = "/a"
			}
			if got := resp.Responses[0].KVs[0].Key; got != wantKey {
				t.Fatalf("branch read %s, want %s", got, wantKey)
			}
			if h.s.Revision() != before || resp.Header.Revision != before {
				t.Fatalf("read-only txn moved revision %d -> %d", before, h.s.Revision())
			}
		})
	}
}

func TestRevisionBumpsOncePerWritingTxn(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name    string
		req     store.TxnRequest
		wantRev int64
	}{
		{"three puts", store.TxnRequest{Then: []store.Op{store.Put("/k/1", []byte("1")), store.Put("/k/2", []byte("2")), store.Put("/k/3", []byte("3"))}}, 1},
		{"put same key twice", store.TxnRequest{Then: []store.Op{store.Put("/k/1", []byte("a")), store.Put("/k/1", []byte("b"))}}, 2},
		{"delete of missing key", store.TxnRequest{Then: []store.Op{store.Delete("/nope")}}, 2},
		{"delete prefix", store.TxnRequest{Then: []store.Op{store.DeletePrefix("/k/")}}, 3},
		{"failed compare with else write", store.TxnRequest{Compares: []store.Compare{store.Absent("/x")}, Then: nil, Else: nil}, 3},
		{
			"else branch writes",
			store.TxnRequest{Compares: []store.Compare{{Key: "/x", Target: store.TargetVersion, Result: store.Greater, Number: 0}}, Else: []store.Op{store.Put("/x", []byte("e"))}},
			4,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.txn(tc.req)
			if resp.Header.Revision != tc.wantRev || h.s.Revision() != tc.wantRev {
				t.Fatalf("revision = %d/%d, want %d", resp.Header.Revision, h.s.Revision(), tc.wantRev)
			}
		})
	}
	// put twice in one txn: version counts both, mod revision is the txn's.
	kv := h.get("/x")
	if kv == nil || kv.ModRevision != 4 || kv.CreateRevision != 4 || kv.Version != 1 {
		t.Fatalf("/x = %+v", kv)
	}
}

func TestPutDeleteRangeResults(t *testing.T) {
	h := newHarness(t)
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/p/a", []byte("1")), store.Put("/p/b", []byte("2")), store.Put("/p/c", []byte("3")), store.Put("/q", []byte("4"))}})
	r := h.txn(store.TxnRequest{Then: []store.Op{{Type: store.OpPut, Key: "/p/a", Value: []byte("1b"), PrevKV: true}}})
	if pk := r.Responses[0].PrevKVs; len(pk) != 1 || string(pk[0].Value) != "1" {
		t.Fatalf("prevKV = %+v", pk)
	}
	rr, _ := h.s.Range(context.Background(), "/p/", store.RangeOptions{End: store.PrefixEnd("/p/"), Limit: 2})
	if rr.Count != 3 || len(rr.KVs) != 2 || !rr.More || rr.KVs[0].Key != "/p/a" || rr.KVs[1].Key != "/p/b" {
		t.Fatalf("range = %+v", rr)
	}
	rr, _ = h.s.Range(context.Background(), "/p/", store.RangeOptions{End: "\x00", CountOnly: true})
	if rr.Count != 4 || len(rr.KVs) != 0 {
		t.Fatalf("count from /p/ to end = %+v", rr)
	}
	rr, _ = h.s.Range(context.Background(), "/p/", store.RangeOptions{End: store.PrefixEnd("/p/"), KeysOnly: true})
	if len(rr.KVs) != 3 || rr.KVs[0].Value != nil {
		t.Fatalf("keys only = %+v", rr.KVs[0])
	}
	d := h.txn(store.TxnRequest{Then: []store.Op{{Type: store.OpDelete, Key: "/p/", End: store.PrefixEnd("/p/"), PrevKV: true}}})
	if d.Responses[0].Deleted != 3 || len(d.Responses[0].PrevKVs) != 3 {
		t.Fatalf("delete = %+v", d.Responses[0])
	}
	if h.get("/p/a") != nil || h.get("/q") == nil {
		t.Fatal("delete prefix removed the wrong keys")
	}
	// recreate: create revision restarts, version restarts at 1
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/p/a", []byte("new"))}})
	kv := h.get("/p/a")
	if kv.Version != 1 || kv.CreateRevision != h.s.Revision() {
		t.Fatalf("recreated key = %+v", kv)
	}
}

// A single key is read in one statement with the revision it was read at.
func TestPointReadCarriesItsRevision(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	rr, err := h.s.Range(ctx, "/k", store.RangeOptions{})
	if err != nil || rr.Header.Revision != 0 || rr.Count != 0 || len(rr.KVs) != 0 {
		t.Fatalf("before any write: %+v, %v", rr, err)
	}
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/k", []byte("v1"))}})
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/k", []byte("v2")), store.Put("/other", []byte("x"))}})
	rr, err = h.s.Range(ctx, "/k", store.RangeOptions{})
	if err != nil || rr.Header.Revision != 2 || rr.Count != 1 || len(rr.KVs) != 1 {
		t.Fatalf("read: %+v, %v", rr, err)
	}
	if kv := rr.KVs[0]; kv.Key != "/k" || string(kv.Value) != "v2" || kv.CreateRevision != 1 || kv.ModRevision != 2 || kv.Version != 2 {
		t.Fatalf("kv = %+v", kv)
	}
	rr, _ = h.s.Range(ctx, "/k", store.RangeOptions{KeysOnly: true})
	if len(rr.KVs) != 1 || rr.KVs[0].Value != nil || rr.KVs[0].Version != 2 {
		t.Fatalf("keys only = %+v", rr.KVs)
	}
	rr, _ = h.s.Range(ctx, "/k", store.RangeOptions{CountOnly: true})
	if rr.Count != 1 || len(rr.KVs) != 0 || rr.Header.Revision != 2 {
		t.Fatalf("count only = %+v", rr)
	}
	rr, _ = h.s.Range(ctx, "/missing", store.RangeOptions{})
	if rr.Header.Revision != 2 || rr.Count != 0 || len(rr.KVs) != 0 {
		t.Fatalf("missing key = %+v", rr)
	}
}

func TestInvalidCommandsChangeNothing(t *testing.T) {
	h := newHarness(t)
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/a", []byte("1"))}})
	hash := h.s.StateHash()
	bad := []Command{
		{Kind: CommandTxn},
		{Kind: 99},
		{Kind: CommandTxn, Txn: &store.TxnRequest{Then: []store.Op{{Type: store.OpPut, Key: ""}}}},
		{Kind: CommandTxn, Txn: &store.TxnRequest{Then: []store.Op{{Type: 7, Key: "/a"}}}},
		{Kind: CommandTxn, Txn: &store.TxnRequest{Compares: []store.Compare{{Key: "/a", Target: 9}}}},
		{Kind: CommandTxn, Txn: &store.TxnRequest{Then: []store.Op{{Type: store.OpDelete, Key: "/b", End: "/a"}}}},
		{Kind: CommandCompact, Compact: &CompactRequest{Revision: 50}},
	}
	for i, cmd := range bad {
		if res := h.apply(cmd); !errors.Is(res.(error), store.ErrInvalidRequest) {
			t.Fatalf("command %d: got %v, want ErrInvalidRequest", i, res)
		}
	}
	h.index++
	if res := h.s.ApplyBatch([]Entry{{Index: h.index, Data: []byte("{not json")}})[0]; !errors.Is(res.(error), store.ErrInvalidRequest) {
		t.Fatalf("garbage entry: %v", res)
	}
	if h.s.Revision() != 1 || h.s.StateHash() != hash || string(h.get("/a").Value) != "1" {
		t.Fatal("invalid commands changed state")
	}
	if h.s.AppliedIndex() != h.index {
		t.Fatalf("applied index %d, want %d", h.s.AppliedIndex(), h.index)
	}
}

func TestReapplyIsSkipped(t *testing.T) {
	h := newHarness(t)
	data, _ := Command{Kind: CommandTxn, Txn: &store.TxnRequest{Then: []store.Op{store.Put("/a", []byte("1"))}}}.Encode()
	h.s.ApplyBatch([]Entry{{Index: 1, Data: data}, {Index: 2, Data: data}})
	h.s.ApplyBatch([]Entry{{Index: 1, Data: data}, {Index: 2, Data: data}, {Index: 3}})
	if kv := h.get("/a"); kv.Version != 2 || h.s.Revision() != 2 || h.s.AppliedIndex() != 3 {
		t.Fatalf("replay applied twice: %+v rev=%d idx=%d", kv, h.s.Revision(), h.s.AppliedIndex())
	}
}

func TestWatchReplaysFromOldRevisionInOrder(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 1200; i++ { // more than two watch windows
		key := "/w/a"
		if i%3 == 0 {
			key = "/other"
		}
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(key, []byte{byte(i)})}})
	}
	h.txn(store.TxnRequest{Then: []store.Op{store.Delete("/w/a")}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := h.s.Watch(ctx, "/w/", 5)
	var got []store.Event
	want := 0
	for rev := int64(5); rev <= 1201; rev++ {
		if (rev-1)%3 != 0 || rev == 1201 {
			want++
		}
	}
	for len(got) < want {
		resp := <-ch
		if resp.Err != nil {
			t.Fatal(resp.Err)
		}
		got = append(got, resp.Events...)
	}
	last := int64(0)
	for _, ev := range got {
		if ev.KV.ModRevision <= last {
			t.Fatalf("out of order: %d after %d", ev.KV.ModRevision, last)
		}
		last = ev.KV.ModRevision
	}
	if end := got[len(got)-1]; end.Type != store.EventDelete || end.PrevKV == nil || end.KV.ModRevision != 1201 {
		t.Fatalf("last event = %+v", end)
	}
	// live events after the replay
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/w/b", []byte("live"))}})
	select {
	case resp := <-ch:
		if len(resp.Events) != 1 || resp.Events[0].KV.Key != "/w/b" || !bytes.Equal(resp.Events[0].KV.Value, []byte("live")) {
			t.Fatalf("live = %+v", resp)
		}
	case <-ctx.Done():
		t.Fatal("no live event")
	}
}

func TestCompactionAndWatchFromCompacted(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 10; i++ {
		h.txn(store.TxnRequest{Then: []store.Op{store.Put("/c", []byte{byte(i)})}})
	}
	res := h.apply(Command{Kind: CommandCompact, Compact: &CompactRequest{Revision: 6}}).(*CompactResult)
	if res.HistoryRows != 6 || h.s.CompactRevision() != 6 {
		t.Fatalf("compact = %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp := <-h.s.Watch(ctx, "/", 3)
	if !errors.Is(resp.Err, store.ErrCompacted) || resp.CompactRevision != 6 {
		t.Fatalf("watch from compacted = %+v", resp)
	}
	resp = <-h.s.Watch(ctx, "/", 7)
	if resp.Err != nil || len(resp.Events) != 4 {
		t.Fatalf("watch after compaction point = %+v", resp)
	}
}

// A Txn's puts are written in multi-row runs; a delete or a second put of
// a key inside the Txn still sees everything written before it.
func TestLongTxnWritesInOrder(t *testing.T) {
	spec := IndexSpec{Name: "ev", Prefix: "/ev/", Columns: []IndexColumn{{Name: "n", Type: "INTEGER", Path: "$.n"}}}
	h := newHarness(t, spec)
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/ev/00", []byte(`{"n":-1}`))}})
	var ops []store.Op
	for i := 0; i < 45; i++ {
		ops = append(ops, store.Put(fmt.Sprintf("/ev/%02d", i), []byte(fmt.Sprintf(`{"n":%d}`, i))))
	}
	ops = append(ops, store.Op{Type: store.OpPut, Key: "/ev/07", Value: []byte(`{"n":700}`), PrevKV: true},
		store.Delete("/ev/08"), store.Put("/ev/08", []byte(`{"n":800}`)), store.Op{Type: store.OpPut, Key: "/ev/00", Value: []byte(`{"n":0}`), PrevKV: true})
	r := h.txn(store.TxnRequest{Then: ops})
	if pk := r.Responses[45].PrevKVs; len(pk) != 1 || string(pk[0].Value) != `{"n":7}` || pk[0].Version != 1 {
		t.Fatalf("second put of /ev/07 saw %+v", pk)
	}
	if pk := r.Responses[48].PrevKVs; len(pk) != 1 || string(pk[0].Value) != `{"n":0}` || pk[0].Version != 2 {
		t.Fatalf("second put of /ev/00 saw %+v", pk)
	}
	if r.Responses[46].Deleted != 1 {
		t.Fatalf("delete = %+v", r.Responses[46])
	}
	rev := h.s.Revision()
	for key, want := range map[string]struct {
		value           string
		create, version int64
	}{"/ev/00": {`{"n":0}`, 1, 3}, "/ev/07": {`{"n":700}`, rev, 2}, "/ev/08": {`{"n":800}`, rev, 1}, "/ev/44": {`{"n":44}`, rev, 1}} {
		kv := h.get(key)
		if kv == nil || string(kv.Value) != want.value || kv.CreateRevision != want.create || kv.Version != want.version || kv.ModRevision != rev {
			t.Fatalf("%s = %+v, want %+v at %d", key, kv, want, rev)
		}
	}
	var rows, sum int64
	err := h.s.ReadTx(context.Background(), func(tx *sql.Tx, _ int64) error {
		return tx.QueryRow(`SELECT count(*), sum(n) FROM idx_ev`).Scan(&rows, &sum)
	})
	// 45 keys; 07 and 08 carry their second values.
	if wantSum := int64(44*45/2 - 7 - 8 + 700 + 800); err != nil || rows != 45 || sum != wantSum {
		t.Fatalf("index rows %d sum %d (want 45, %d), %v", rows, sum, wantSum, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp := <-h.s.Watch(ctx, "/ev/", rev)
	if resp.Err != nil || len(resp.Events) != 49 {
		t.Fatalf("history of the Txn: %d events, %v", len(resp.Events), resp.Err)
	}
	for i, ev := range resp.Events {
		want := ops[i]
		if ev.KV.Key != want.Key || (want.Type == store.OpDelete) != (ev.Type == store.EventDelete) {
			t.Fatalf("event %d = %v %s, want op %v %s", i, ev.Type, ev.KV.Key, want.Type, want.Key)
		}
	}
}

func TestIndexTablesFollowKV(t *testing.T) {
	spec := IndexSpec{Name: "users", Prefix: "/users/", Columns: []IndexColumn{
		{Name: "username", Type: "TEXT", Path: "$.username"},
		{Name: "age", Type: "INTEGER", Path: "$.age"},
	}}
	h := newHarness(t, spec)
	h.txn(store.TxnRequest{Then: []store.Op{
		store.Put("/users/1", []byte(`{"username":"ann","age":31}`)),
		store.Put("/users/2", []byte(`not json`)),
		store.Put("/other/1", []byte(`{"username":"zed"}`)),
	}})
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/users/1", []byte(`{"username":"anne","age":32}`))}})
	h.txn(store.TxnRequest{Then: []store.Op{store.Delete("/users/2")}})
	var name string
	var age, n int64
	err := h.s.ReadTx(context.Background(), func(tx *sql.Tx, rev int64) error {
		if err := tx.QueryRow(`SELECT count(*) FROM idx_users`).Scan(&n); err != nil {
			return err
		}
		return tx.QueryRow(`SELECT username, age FROM idx_users WHERE key = '/users/1'`).Scan(&name, &age)
	})
	if err != nil || n != 1 || name != "anne" || age != 32 {
		t.Fatalf("index: n=%d name=%q age=%d err=%v", n, name, age, err)
	}
	// A changed declaration rebuilds the table from kv on open.
	path := h.s.Path()
	h.s.Close()
	spec.Columns = spec.Columns[:1]
	s2, err := Open(path, []IndexSpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	err = s2.ReadTx(context.Background(), func(tx *sql.Tx, rev int64) error {
		return tx.QueryRow(`SELECT username FROM idx_users WHERE key = '/users/1'`).Scan(&name)
	})
	if err != nil || name != "anne" || s2.Revision() != 3 {
		t.Fatalf("rebuilt index: %q %v rev=%d", name, err, s2.Revision())
	}
	// A declaration that is gone takes its table with it; kv stays.
	s2.Close()
	s3, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	err = s3.ReadTx(context.Background(), func(tx *sql.Tx, rev int64) error {
		if err := tx.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'idx_users'`).Scan(&n); err != nil {
			return err
		}
		return tx.QueryRow(`SELECT count(*) FROM index_specs`).Scan(&age)
	})
	if err != nil || n != 0 || age != 0 || s3.Revision() != 3 {
		t.Fatalf("undeclared index: %d tables, %d specs, %v, rev=%d", n, age, err, s3.Revision())
	}
	if got, err := s3.Range(context.Background(), "/users/1", store.RangeOptions{}); err != nil || len(got.KVs) != 1 {
		t.Fatalf("kv after dropping the index: %+v %v", got, err)
	}
}

func TestSnapshotRestore(t *testing.T) {
	a := newHarness(t)
	for i := 0; i < 50; i++ {
		a.txn(store.TxnRequest{Then: []store.Op{store.Put("/s/"+string(rune('a'+i%26)), []byte{byte(i)})}})
	}
	var buf bytes.Buffer
	if err := a.s.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	b := newHarness(t)
	b.txn(store.TxnRequest{Then: []store.Op{store.Put("/stale", []byte("x"))}})
	if err := b.s.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if b.s.Revision() != 50 || b.s.StateHash() != a.s.StateHash() || b.s.AppliedIndex() != 50 || b.get("/stale") != nil {
		t.Fatalf("restored rev=%d idx=%d", b.s.Revision(), b.s.AppliedIndex())
	}
	if err := b.s.Restore(bytes.NewReader([]byte("garbage"))); err == nil {
		t.Fatal("garbage snapshot accepted")
	}
	if b.s.Revision() != 50 {
		t.Fatal("failed restore changed state")
	}
}

// TestLocalWriteFailureHaltsInsteadOfSkipping makes a put fail inside SQLite
// (a trigger only this replica has): the state machine must not report the
// entry as failed and move on, because the other replicas applied it; it
// halts, and the state is unchanged.
// A local failure (here a trigger; in production a full disk) halts the
// batch: nothing of it is applied or skipped, the failure is reported, and
// the same batch is applied once the failure is gone.
// withTrigger creates a trigger (a way to make an apply fail locally) from
// another connection, which it returns for dropping the trigger again.
func withTrigger(t *testing.T, h *harness, ddl string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+h.s.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(ddl); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestLocalWriteFailureHaltsInsteadOfSkipping(t *testing.T) {
	h := newHarness(t)
	db := withTrigger(t, h, `CREATE TRIGGER boom BEFORE INSERT ON kv WHEN NEW.key = '/boom' BEGIN SELECT RAISE(ABORT, 'boom'); END`)
	enc := func(req store.TxnRequest) []byte {
		b, _ := Command{Kind: CommandTxn, Txn: &req}.Encode()
		return b
	}
	done := make(chan []any, 1)
	go func() {
		done <- h.s.ApplyBatch([]Entry{
			{Index: 1, Data: enc(store.TxnRequest{Then: []store.Op{store.Put("/a", []byte("1"))}})},
			{Index: 2, Data: enc(store.TxnRequest{Then: []store.Op{store.Put("/ok", []byte("2")), store.Put("/boom", []byte("3"))}})},
		})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, failed := h.s.Stalled(); failed != nil {
			if !strings.Contains(failed.Error(), "boom") {
				t.Fatalf("stalled on %v, want the failure named", failed)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failing batch was not reported as stalled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("ApplyBatch returned while its batch cannot be applied")
	case <-time.After(300 * time.Millisecond):
	}
	if h.get("/a") != nil || h.get("/ok") != nil || h.s.Revision() != 0 || h.s.AppliedIndex() != 0 {
		t.Fatalf("state changed by a failed batch: rev=%d idx=%d", h.s.Revision(), h.s.AppliedIndex())
	}
	if _, err := db.Exec(`DROP TRIGGER boom`); err != nil {
		t.Fatal(err)
	}
	var results []any
	select {
	case results = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the batch was not applied after the failure went away")
	}
	if _, ok := results[1].(*store.TxnResponse); !ok {
		t.Fatalf("result %v", results[1])
	}
	if h.get("/boom") == nil || h.s.AppliedIndex() != 2 || h.s.Revision() != 2 {
		t.Fatalf("after resuming: rev=%d idx=%d", h.s.Revision(), h.s.AppliedIndex())
	}
	if _, failed := h.s.Stalled(); failed != nil {
		t.Fatalf("still reported stalled: %v", failed)
	}
}

// StopApplying releases a halted batch with store.ErrClosed results.
func TestStopApplyingReleasesAHaltedBatch(t *testing.T) {
	h := newHarness(t)
	withTrigger(t, h, `CREATE TRIGGER boom BEFORE INSERT ON kv BEGIN SELECT RAISE(ABORT, 'boom'); END`)
	b, _ := Command{Kind: CommandTxn, Txn: &store.TxnRequest{Then: []store.Op{store.Put("/a", []byte("1"))}}}.Encode()
	done := make(chan []any, 1)
	go func() { done <- h.s.ApplyBatch([]Entry{{Index: 1, Data: b}}) }()
	time.Sleep(200 * time.Millisecond)
	h.s.StopApplying()
	select {
	case r := <-done:
		if !errors.Is(r[0].(error), store.ErrClosed) {
			t.Fatalf("result %v", r[0])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("StopApplying did not release the halted batch")
	}
	if h.s.AppliedIndex() != 0 {
		t.Fatal("entry recorded as applied")
	}
}

func TestDatabaseFilesArePrivate(t *testing.T) {
	h := newHarness(t)
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/a", []byte("1"))}})
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(h.s.Path() + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %o", suffix, fi.Mode().Perm())
		}
	}
}

// The checkpointer reads the frames waiting in the WAL from the WAL index;
// a checkpoint copies them and the count drops to zero.
func TestPendingFramesFollowTheWAL(t *testing.T) {
	h := newHarness(t)
	shm := h.s.Path() + "-shm"
	_, before, err := walFrames(shm)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(fmt.Sprintf("/f/%d", i), bytes.Repeat([]byte("x"), 8000))}})
	}
	_, after, err := walFrames(shm)
	if err != nil || after < before+20 {
		t.Fatalf("pending frames %d -> %d after 20 commits of 8 KB (%v)", before, after, err)
	}
	db, err := sql.Open("sqlite", "file:"+h.s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		t.Fatal(err)
	}
	if _, n, err := walFrames(shm); err != nil || n != 0 {
		t.Fatalf("pending frames after a checkpoint = %d (%v)", n, err)
	}
}

// A watch on one area skips the history reads while other areas change,
// and still delivers every change of its own, live or replayed.
func TestWatchOfOneAreaSeesOnlyItsChanges(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	live := h.s.Watch(ctx, "/a/b/", 0)
	for i := 0; i < 5; i++ {
		h.txn(store.TxnRequest{Then: []store.Op{store.Put(fmt.Sprintf("/x/y/%d", i), []byte("other"))}})
	}
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/a/b/k", []byte("mine"))}})
	mine := h.s.Revision()
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/a/bc", []byte("next door"))}})
	h.txn(store.TxnRequest{Then: []store.Op{store.Delete("/a/b/k")}})
	var got []store.Event
	for len(got) < 2 {
		select {
		case resp := <-live:
			got = append(got, resp.Events...)
		case <-ctx.Done():
			t.Fatalf("live watch gave %d events", len(got))
		}
	}
	if got[0].KV.Key != "/a/b/k" || got[0].KV.ModRevision != mine || got[1].Type != store.EventDelete || len(got) != 2 {
		t.Fatalf("live events = %+v", got)
	}
	replay := <-h.s.Watch(ctx, "/a/b/", 1)
	if len(replay.Events) != 2 || replay.Events[0].KV.ModRevision != mine {
		t.Fatalf("replayed events = %+v", replay)
	}
}

// The compares' reads stand in for the previous versions of the first
// puts, and only until something is written.
func TestComparedKeysArePutOnWhatTheCompareRead(t *testing.T) {
	h := newHarness(t)
	h.txn(store.TxnRequest{Then: []store.Op{store.Put("/k", []byte("v1"))}})
	r := h.txn(store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs("/k", 1), store.Absent("/new")},
		Then: []store.Op{{Type: store.OpPut, Key: "/k", Value: []byte("v2"), PrevKV: true}, {Type: store.OpPut, Key: "/new", Value: []byte("n"), PrevKV: true}}})
	if pk := r.Responses[0].PrevKVs; !r.Succeeded || len(pk) != 1 || string(pk[0].Value) != "v1" || len(r.Responses[1].PrevKVs) != 0 {
		t.Fatalf("rmw = %+v", r)
	}
	if kv := h.get("/k"); kv.Version != 2 || kv.CreateRevision != 1 || kv.ModRevision != 2 {
		t.Fatalf("/k = %+v", kv)
	}
	// Compare, delete, put again: the put creates the key anew.
	r = h.txn(store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs("/k", 2)},
		Then: []store.Op{store.Delete("/k"), {Type: store.OpPut, Key: "/k", Value: []byte("v3"), PrevKV: true}}})
	if !r.Succeeded || len(r.Responses[1].PrevKVs) != 0 {
		t.Fatalf("delete then put = %+v", r)
	}
	if kv := h.get("/k"); kv.Version != 1 || kv.CreateRevision != 3 {
		t.Fatalf("/k after delete and put = %+v", kv)
	}
	// A failed compare's Else branch puts on the same reads.
	r = h.txn(store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs("/k", 99)},
		Else: []store.Op{{Type: store.OpPut, Key: "/k", Value: []byte("v4"), PrevKV: true}}})
	if r.Succeeded || len(r.Responses[0].PrevKVs) != 1 || string(r.Responses[0].PrevKVs[0].Value) != "v3" {
		t.Fatalf("else branch = %+v", r)
	}
	if kv := h.get("/k"); kv.Version != 2 || string(kv.Value) != "v4" {
		t.Fatalf("/k after else = %+v", kv)
	}
}

// Under sustained writes with a reader always present, passive checkpoints
// alone never let the WAL start over; the checkpointer then holds writers
// off for a moment instead, so the WAL stays bounded.
func TestWALStaysBoundedUnderSustainedWrites(t *testing.T) {
	c, r := walCheckpointBytes, walRestartBytes
	t.Cleanup(func() { walCheckpointBytes, walRestartBytes = c, r })
	walCheckpointBytes, walRestartBytes = 1<<20, 4<<20
	h := newHarness(t)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func(r int) {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				h.s.ReadTx(context.Background(), func(tx *sql.Tx, _ int64) error {
					time.Sleep(time.Duration(3+r) * time.Millisecond)
					return nil
				})
			}
		}(r)
	}
	value := bytes.Repeat([]byte("w"), 3000)
	var largest int64
	for b := 0; b < 300; b++ {
		var es []Entry
		for j := 0; j < 20; j++ {
			req := store.TxnRequest{Then: []store.Op{store.Put(fmt.Sprintf("/w/%04d", (b*20+j)%5000), value)}}
			d, _ := Command{Kind: CommandTxn, Txn: &req}.Encode()
			h.index++
			es = append(es, Entry{Index: h.index, Data: d})
		}
		h.s.ApplyBatch(es)
		if _, wal := h.s.FileSizes(); wal > largest {
			largest = wal
		}
	}
	close(stop)
	readers.Wait()
	// About 35 MB went through the WAL.
	if bound := 3 * walRestartBytes; largest > bound {
		t.Fatalf("the WAL grew to %d MiB under sustained writes (bound %d MiB)", largest>>20, bound>>20)
	}
	t.Logf("largest WAL %d MiB", largest>>20)
}
