package audit

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
)

func TestKeyBeforeMatchesUUIDv7Order(t *testing.T) {
	now := time.Now()
	id, _ := uuid.NewV7()
	k := KeyPrefix + id.String()
	if k <= keyBefore(now.Add(-time.Second)) || k >= keyBefore(now.Add(time.Second)) {
		t.Fatalf("%s not between %s and %s", k, keyBefore(now.Add(-time.Second)), keyBefore(now.Add(time.Second)))
	}
}

func TestListFiltersAndPages(t *testing.T) {
	s, err := sqlitefsm.Open(filepath.Join(t.TempDir(), "s.db"), []query.Index{Index})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var idx uint64
	for i := 0; i < 30; i++ {
		rec := Record{EventType: "security.token.created", Outcome: Success, ActorType: "system"}
		if i%3 == 0 {
			rec.EventType, rec.Outcome = "security.permission_denied", Denied
		}
		op, _ := Op(rec)
		data, _ := sqlitefsm.Command{Kind: sqlitefsm.CommandTxn, Txn: &store.TxnRequest{Then: []store.Op{op}}}.Encode()
		idx++
		s.ApplyBatch([]sqlitefsm.Entry{{Index: idx, Data: data}})
		time.Sleep(2 * time.Millisecond)
	}
	ctx := context.Background()
	all, total, err := List(ctx, s, Query{Page: 1, PageSize: 200})
	if err != nil || total != 30 || len(all) != 30 || !all[0].OccurredAt.After(all[29].OccurredAt) {
		t.Fatalf("all: %d %d %v", total, len(all), err)
	}
	denied, total, _ := List(ctx, s, Query{Outcome: Denied, Page: 1, PageSize: 4})
	if total != 10 || len(denied) != 4 || denied[0].EventType != "security.permission_denied" {
		t.Fatalf("denied page: %d %+v", total, denied)
	}
	page3, _, _ := List(ctx, s, Query{Outcome: Denied, Page: 3, PageSize: 4})
	if len(page3) != 2 {
		t.Fatalf("last page has %d", len(page3))
	}
	before := all[9].OccurredAt
	older, total, _ := List(ctx, s, Query{Before: &before, Page: 1, PageSize: 200})
	if total != 20 || older[0].AuditID != all[10].AuditID {
		t.Fatalf("before: total %d first %s want %s", total, older[0].AuditID, all[10].AuditID)
	}
}
