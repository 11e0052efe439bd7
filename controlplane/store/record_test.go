package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

type thing struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// TestRecordHelpers: a record goes in with PutRecord, comes back with
// GetRecord and Records, changes with UpdateRecord (which sees nil for an
// absent key and keeps an error from its function), and a value that is
// not a T is an error naming its key.
func TestRecordHelpers(t *testing.T) {
	ctx := context.Background()
	node := storetest.SingleNode(t)
	if _, kv, err := store.GetRecord[thing](ctx, node, "/things/none", store.Local); kv != nil || err != nil {
		t.Fatalf("an absent record: %v %v", kv, err)
	}
	op, err := store.PutRecord("/things/a", thing{Name: "a", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{op, store.Put("/things/broken", []byte("{"))}}); err != nil {
		t.Fatal(err)
	}
	got, kv, err := store.GetRecord[thing](ctx, node, "/things/a", store.Local)
	if err != nil || kv == nil || got != (thing{Name: "a", Count: 1}) {
		t.Fatalf("read back %+v %v %v", got, kv, err)
	}
	if _, _, err := store.GetRecord[thing](ctx, node, "/things/broken", store.Local); err == nil || !strings.Contains(err.Error(), "/things/broken") {
		t.Fatalf("a broken record: %v", err)
	}
	if _, err := store.Records[thing](ctx, node, "/things/", store.Local); err == nil {
		t.Fatal("a prefix holding a broken record listed without an error")
	}
	bump := func(cur *thing) (*thing, []store.Op, []store.Compare, error) {
		if cur == nil {
			return &thing{Name: "b", Count: 1}, nil, nil, nil
		}
		cur.Count++
		return cur, nil, nil, nil
	}
	for _, key := range []string{"/things/a", "/things/b", "/things/b"} {
		if _, err := store.UpdateRecord(ctx, node, key, bump); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Delete("/things/broken")}}); err != nil {
		t.Fatal(err)
	}
	all, err := store.Records[thing](ctx, node, "/things/", store.Local)
	if err != nil || len(all) != 2 || all[0].Count != 2 || all[1] != (thing{Name: "b", Count: 2}) {
		t.Fatalf("after updates: %+v %v", all, err)
	}
	refused := errors.New("refused")
	rev := node.Revision()
	if _, err := store.UpdateRecord(ctx, node, "/things/a", func(*thing) (*thing, []store.Op, []store.Compare, error) {
		return nil, nil, nil, refused
	}); !errors.Is(err, refused) || node.Revision() != rev {
		t.Fatalf("a refused update: %v, revision %d -> %d", err, rev, node.Revision())
	}
}
