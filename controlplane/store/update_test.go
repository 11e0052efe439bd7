package store_test

import (
	"context"
	"testing"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestUpdateAbsentGuessesWithoutReading: UpdateAbsent runs its function
// on nil first; when the key exists after all, the failed Txn's read hands
// the function the current value, and the write replaces that value, not
// a value the function never saw.
func TestUpdateAbsentGuessesWithoutReading(t *testing.T) {
	ctx := context.Background()
	node := storetest.SingleNode(t)
	var saw []string
	fn := func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			saw = append(saw, "nil")
			return []byte("1"), nil, nil, nil
		}
		saw = append(saw, string(kv.Value))
		return append(kv.Value, '+'), nil, nil, nil
	}
	if _, err := store.UpdateAbsent(ctx, node, "/k", fn); err != nil {
		t.Fatal(err)
	}
	if _, err := store.UpdateAbsent(ctx, node, "/k", fn); err != nil {
		t.Fatal(err)
	}
	kv, _, err := store.Get(ctx, node, "/k", store.Local)
	if err != nil || kv == nil {
		t.Fatalf("%v %v", kv, err)
	}
	if string(kv.Value) != "1+" || kv.Version != 2 {
		t.Fatalf("value %q version %d, want 1+ and 2", kv.Value, kv.Version)
	}
	if got := len(saw); got != 3 || saw[0] != "nil" || saw[1] != "nil" || saw[2] != "1" {
		t.Fatalf("the function saw %v, want [nil nil 1]", saw)
	}
}
