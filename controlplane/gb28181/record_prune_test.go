package gb28181

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/test/testkit"
)

// taskIDAt is a UUIDv7 task id made at t.
func taskIDAt(t *testing.T, at time.Time) string {
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(at.UnixMilli()))
	copy(id[:6], ms[2:])
	return id.String()
}

func putQuery(t *testing.T, st store.Store, at time.Time, state string) string {
	t.Helper()
	q := RecordQuery{TaskID: taskIDAt(t, at), DeviceID: testDeviceID, ChannelID: recordChannelID, State: state, CreatedAt: at.UTC(),
		Records: []RecordSpan{{RecordID: "1", StartTime: at, EndTime: at.Add(time.Hour)}}}
	if state != QueryRunning {
		f := at.Add(10 * time.Second).UTC()
		q.FinishedAt = &f
	}
	op, err := store.PutRecord(RecordQueryPrefix+q.TaskID, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Txn(context.Background(), store.TxnRequest{Then: []store.Op{op}}); err != nil {
		t.Fatal(err)
	}
	return q.TaskID
}

// TestPruneRecordQueries: queries made before the cut go (finished, and a
// Running one a restarted node left behind), in batches of the limit;
// newer ones, Running or finished, stay readable.
func TestPruneRecordQueries(t *testing.T) {
	st := storetest.SingleNode(t)
	ctx := context.Background()
	now := time.Now()
	var old []string
	for i := 0; i < 5; i++ {
		old = append(old, putQuery(t, st, now.Add(-48*time.Hour+time.Duration(i)*time.Minute), QuerySucceeded))
	}
	old = append(old, putQuery(t, st, now.Add(-30*time.Hour), QueryIncomplete), putQuery(t, st, now.Add(-25*time.Hour), QueryRunning))
	keep := []string{putQuery(t, st, now.Add(-23*time.Hour), QuerySucceeded), putQuery(t, st, now.Add(-time.Second), QueryRunning)}

	cut := now.Add(-RecordQueryRetention)
	if n, err := PruneRecordQueries(ctx, st, cut, 4); err != nil || n != 4 {
		t.Fatalf("first batch: %d %v", n, err)
	}
	if n, err := PruneRecordQueries(ctx, st, cut, 4); err != nil || n != 3 {
		t.Fatalf("second batch: %d %v", n, err)
	}
	if n, err := PruneRecordQueries(ctx, st, cut, 4); err != nil || n != 0 {
		t.Fatalf("nothing left: %d %v", n, err)
	}
	for _, id := range old {
		if _, err := GetRecordQuery(ctx, st, id); err == nil {
			t.Fatalf("query %s outlived its retention", id)
		}
	}
	for _, id := range keep {
		if _, err := GetRecordQuery(ctx, st, id); err != nil {
			t.Fatalf("query %s: %v", id, err)
		}
	}
}

// TestPruneRecordQueriesLoop: the loop a leader runs removes what is
// older than its retention and reports it.
func TestPruneRecordQueriesLoop(t *testing.T) {
	st := storetest.SingleNode(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := putQuery(t, st, time.Now().Add(-2*time.Hour), QuerySucceeded)
	keep := putQuery(t, st, time.Now(), QuerySucceeded)
	removed := make(chan int, 100)
	go PruneRecordQueriesLoop(ctx, st, time.Hour, 50*time.Millisecond, func(n int, err error) {
		if err == nil {
			removed <- n
		}
	})
	total := 0
	testkit.Eventually(t, 30*time.Second, "the old query pruned and reported", func() bool {
		for len(removed) > 0 {
			total += <-removed
		}
		return total >= 1
	})
	if _, err := GetRecordQuery(context.Background(), st, old); err == nil {
		t.Fatal("the old query outlived its retention")
	}
	if _, err := GetRecordQuery(context.Background(), st, keep); err != nil {
		t.Fatal(err)
	}
	if total != 1 {
		t.Fatalf("reported %d removed, want 1", total)
	}
}
