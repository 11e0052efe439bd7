package sqlitefsm

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

// A database of schema 1 (a history row per changed key with the previous
// value, and a hash row per revision) opens as schema 2 with the same
// revision, hashes, applied index and watch history.
func TestMigrationFromPerKeyHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	for _, ddl := range migrations[0].ddl {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	h := func(n int) string { return strings.Repeat(string(rune('a'+n)), 64) }
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO schema_migrations VALUES (1, 'base')`, nil},
		{`INSERT INTO kv VALUES ('/a', 'a2', 1, 2, 2)`, nil},
		{`INSERT INTO history VALUES (1, 1, 0, '/a', 'a1', 1, 1, NULL, 0, 0, 0)`, nil},
		{`INSERT INTO history VALUES (2, 1, 0, '/a', 'a2', 1, 2, 'a1', 1, 1, 1)`, nil},
		{`INSERT INTO history VALUES (3, 1, 0, '/b', 'b1', 3, 1, NULL, 0, 0, 0)`, nil},
		{`INSERT INTO history VALUES (4, 1, 1, '/b', NULL, 0, 0, 'b1', 3, 3, 1)`, nil},
		{`INSERT INTO revision_hashes VALUES (1, 5, ?), (2, 6, ?), (3, 7, ?), (4, 9, ?)`, []any{h(0), h(1), h(2), h(3)}},
		{`INSERT INTO meta VALUES ('revision', 4, ''), ('applied_index', 10, ''), ('compact_revision', 0, ''), ('state_hash', 0, ?)`, []any{h(3)}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	db.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Revision() != 4 || s.StateHash() != h(3) || s.AppliedIndex() != 10 {
		t.Fatalf("after migration rev=%d hash=%s applied=%d", s.Revision(), s.StateHash(), s.AppliedIndex())
	}
	if got, _ := s.HashAt(context.Background(), 2); got != h(1) {
		t.Fatalf("hash at 2 = %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp := <-s.Watch(ctx, "/", 1)
	if resp.Err != nil || len(resp.Events) != 4 {
		t.Fatalf("watch after migration: %+v", resp)
	}
	ev := resp.Events
	if string(ev[1].KV.Value) != "a2" || ev[1].KV.Version != 2 || ev[1].PrevKV == nil || string(ev[1].PrevKV.Value) != "a1" || ev[1].PrevKV.ModRevision != 1 {
		t.Fatalf("second event %+v prev %+v", ev[1].KV, ev[1].PrevKV)
	}
	if ev[3].Type != store.EventDelete || ev[3].KV.ModRevision != 4 || ev[3].PrevKV == nil || string(ev[3].PrevKV.Value) != "b1" || ev[3].PrevKV.CreateRevision != 3 {
		t.Fatalf("delete event %+v prev %+v", ev[3].KV, ev[3].PrevKV)
	}
	// The next write continues the chain.
	b, _ := Command{Kind: CommandTxn, Txn: &store.TxnRequest{Then: []store.Op{store.Put("/c", []byte("c"))}}}.Encode()
	if r, ok := s.ApplyBatch([]Entry{{Index: 11, Data: b}})[0].(*store.TxnResponse); !ok || r.Header.Revision != 5 {
		t.Fatalf("write after migration: %v", r)
	}
}

// A change record decodes to what was encoded, and malformed records are
// refused rather than misread.
func TestChangeRecordsRoundTrip(t *testing.T) {
	b := appendChange(nil, changePut, "/k", []byte("value"), 3, 2, 4)
	b = appendChange(b, changeDelete, "/gone", nil, 1, 7, 9)
	got, err := decodeChanges(b)
	if err != nil || len(got) != 2 {
		t.Fatalf("%v %v", got, err)
	}
	if got[0].key != "/k" || string(got[0].value) != "value" || got[0].create != 3 || got[0].version != 2 || got[0].prevMod != 4 {
		t.Fatalf("put %+v", got[0])
	}
	if got[1].typ != changeDelete || got[1].key != "/gone" || got[1].value != nil || got[1].prevMod != 9 {
		t.Fatalf("delete %+v", got[1])
	}
	for i := 1; i < len(b); i++ {
		if _, err := decodeChanges(b[:i]); err == nil && i != len(appendChange(nil, changePut, "/k", []byte("value"), 3, 2, 4)) {
			t.Fatalf("a record cut at %d decoded", i)
		}
	}
}
