package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// One credential denied thousands of times writes two records per window:
// the first denial, and a summary of the rest; another credential gets its
// own.
func TestDenialsAreSummedUpPerCredential(t *testing.T) {
	n := storetest.SingleNode(t, audit.Index)
	ctx, cancel := context.WithCancel(context.Background())
	d := NewDenialAuditor(ctx, n, zap.NewNop(), time.Second)
	for i := range 5000 {
		target := "GET /api/v2/security/users"
		if i%2 == 1 {
			target = "DELETE /api/v2/channels/{channelId}"
		}
		d.Record(audit.Record{EventType: "security.permission_denied", Outcome: audit.Denied, ActorType: "api-token", ActorID: "flood", Target: target})
	}
	d.Record(audit.Record{EventType: "security.permission_denied", Outcome: audit.Denied, ActorType: "api-token", ActorID: "other", Target: "GET /x"})
	time.Sleep(2 * time.Second)
	cancel()
	d.Wait()
	resp, err := n.Range(context.Background(), audit.KeyPrefix, store.RangeOptions{End: store.PrefixEnd(audit.KeyPrefix)})
	if err != nil {
		t.Fatal(err)
	}
	byActor := map[string][]audit.Record{}
	for _, kv := range resp.KVs {
		var r audit.Record
		json.Unmarshal(kv.Value, &r)
		byActor[r.ActorID] = append(byActor[r.ActorID], r)
	}
	flood := byActor["flood"]
	if len(flood) != 2 || len(byActor["other"]) != 1 {
		t.Fatalf("records: flood %d, other %d", len(flood), len(byActor["other"]))
	}
	if !strings.Contains(flood[1].Message, "4999 more permission denials") || !strings.Contains(flood[1].Message, "GET /api/v2/security/users (2499)") ||
		!strings.Contains(flood[1].Message, "DELETE /api/v2/channels/{channelId} (2500)") {
		t.Fatalf("summary %q", flood[1].Message)
	}
}
