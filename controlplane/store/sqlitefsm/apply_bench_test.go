package sqlitefsm

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
)

// BenchmarkApplyEvents applies Txns of 50 new keys with ~700-byte JSON
// values under an indexed prefix, the shape of a batch of engine hook
// events; it reports the cost per key.
func BenchmarkApplyEvents(b *testing.B) {
	spec := IndexSpec{Name: "bench", Prefix: "/e/", Columns: []IndexColumn{
		{Name: "event_name", Type: "TEXT", Path: "$.eventName"},
		{Name: "source", Type: "TEXT", Path: "$.source"},
		{Name: "target", Type: "TEXT", Path: "$.targetSubscriptionId"},
		{Name: "media_server_id", Type: "TEXT", Path: "$.data.MediaServerId"},
	}}
	s, err := Open(filepath.Join(b.TempDir(), "state.db"), []IndexSpec{spec})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	raw := strings.Repeat(`\"x\":1,`, 60)
	index, n := uint64(0), 0
	b.ResetTimer()
	for i := 0; i < b.N; i += 50 {
		req := store.TxnRequest{}
		for j := 0; j < 50; j++ {
			n++
			v := fmt.Sprintf(`{"eventId":"%08d","eventName":"engine.webhook.OnPlay","source":"engine","data":{"MediaServerId":"ms1","RawJson":"{%s}"}}`, n, raw)
			req.Then = append(req.Then, store.Put(fmt.Sprintf("/e/%08d", n), []byte(v)))
		}
		data, err := Command{Kind: CommandTxn, Txn: &req}.Encode()
		if err != nil {
			b.Fatal(err)
		}
		index++
		if res := s.ApplyBatch([]Entry{{Index: index, Data: data}})[0]; res == nil {
			b.Fatal("no result")
		}
	}
}

// BenchmarkApplySmallTxns applies Txns of one compare and two puts (a
// record and an index-less marker), the shape of most API writes.
func BenchmarkApplySmallTxns(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "state.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	value := []byte(strings.Repeat("v", 400))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := fmt.Sprintf("/r/%08d", i)
		req := store.TxnRequest{Compares: []store.Compare{store.Absent(key)}, Then: []store.Op{store.Put(key, value), store.Put("/m/last", []byte(key))}}
		data, err := Command{Kind: CommandTxn, Txn: &req}.Encode()
		if err != nil {
			b.Fatal(err)
		}
		if res := s.ApplyBatch([]Entry{{Index: uint64(i + 1), Data: data}})[0]; res == nil {
			b.Fatal("no result")
		}
	}
}
