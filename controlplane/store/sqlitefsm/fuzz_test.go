package sqlitefsm

import (
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
