package sqlitefsm

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
)

// FuzzApplyEntry feeds arbitrary log entry bytes (what a forwarded proposal
// or a corrupted log could carry) to the state machine: it must never panic,
// and an entry it rejects must leave the state exactly as it was.
func FuzzApplyEntry(f *testing.F) {
	for _, seed := range []string{
		`{"k":1,"t":{"then":[{"type":1,"key":"/a","value":"eA=="}]}}`,
		`{"k":1,"t":{"compares":[{"key":"/a","target":3,"result":0,"value":"eA=="}],"then":[{"type":2,"key":"/a","end":"/b"}],"else":[{"type":0,"key":"/a"}]}}`,
		`{"k":2,"c":{"revision":1}}`,
		`{"k":1,"t":{"then":[{"type":1,"key":""}]}}`,
		`{"k":9}`, `{}`, `null`, `[`, "",
	} {
		f.Add([]byte(seed))
	}
	s, err := Open(filepath.Join(f.TempDir(), "state.db"), []IndexSpec{{Name: "things", Prefix: "/t/", Columns: []IndexColumn{{Name: "n", Type: "TEXT", Path: "$.n"}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	var index uint64
	f.Fuzz(func(t *testing.T, data []byte) {
		rev, hash := s.Revision(), s.StateHash()
		index++
		res := s.ApplyBatch([]Entry{{Index: index, Data: data}})[0]
		if s.AppliedIndex() != index {
			t.Fatalf("applied index %d, want %d", s.AppliedIndex(), index)
		}
		switch r := res.(type) {
		case error:
			if s.Revision() != rev || s.StateHash() != hash {
				t.Fatalf("rejected entry changed the state: %v", r)
			}
		case *store.TxnResponse:
			if r.Header.Revision != s.Revision() || (s.Revision() != rev && s.Revision() != rev+1) {
				t.Fatalf("revision moved from %d to %d", rev, s.Revision())
			}
		}
	})
}

// FuzzDecodeChanges reads arbitrary bytes as a revision's change records
// (a damaged database could hold any): no panic, and what decodes encodes
// to records that decode to the same changes (varints may come back
// shorter).
func FuzzDecodeChanges(f *testing.F) {
	f.Add(appendChange(nil, changePut, "/a", []byte("x"), 1, 1, 0))
	f.Add(appendChange(appendChange(nil, changePut, "/a", nil, 2, 3, 1), changeDelete, "/b", nil, 1, 1, 1))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, data []byte) {
		changes, err := decodeChanges(data)
		if err != nil {
			return
		}
		var again []byte
		for _, c := range changes {
			again = appendChange(again, c.typ, c.key, c.value, c.create, c.version, c.prevMod)
		}
		back, err := decodeChanges(again)
		if err != nil || fmt.Sprint(back) != fmt.Sprint(changes) {
			t.Fatalf("decoded %x as %v, encoded again as %x, which decodes as %v (%v)", data, changes, again, back, err)
		}
	})
}
