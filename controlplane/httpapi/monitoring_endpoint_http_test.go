package httpapi_test

import (
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestHeartbeatsReachEveryControlNode: a heartbeat taken on one control
// node is passed to the others, so monitoring and its history answer the
// same from any node, and the node list shows every control node online.
func TestHeartbeatsReachEveryControlNode(t *testing.T) {
	first := controlnode.StartNode(t, "m1", "", "")
	second := controlnode.StartNode(t, "m2", first.URL, first.KeyFile())
	tok := first.Token("nodes.view", "nodes.manage")
	second.S.Node.WaitForRevision(t.Context(), first.S.Node.Revision())
	var beat struct {
		NodeId      string
		ForwardedTo int
		Host        struct {
			CpuCores      int
			MemTotalBytes int64
		}
	}
	first.Do("POST", "/api/v2/nodes/self/heartbeat", tok, "", nil).JSON(t, &beat)
	if beat.NodeId != "m1" || beat.ForwardedTo != 1 || beat.Host.CpuCores < 1 || beat.Host.MemTotalBytes == 0 {
		t.Fatalf("self heartbeat %+v", beat)
	}
	var mon struct {
		AnsweredBy string
		Nodes      []struct {
			NodeId, Kind, Status string
			LastHeartbeatAt      *time.Time
			Host                 *struct{ CpuCores int }
		}
		HistoryBucketSeconds int
		History              []struct {
			NodeId string
			Points []struct{ Samples int }
		}
	}
	r := second.Get("/api/v2/cluster/monitoring?historyMinutes=5&historyNodeId=m1&historyBucketSeconds=60", tok)
	r.JSON(t, &mon)
	if mon.AnsweredBy != "m2" || len(mon.Nodes) != 2 || mon.HistoryBucketSeconds != 60 || len(mon.History) != 1 || mon.History[0].NodeId != "m1" || len(mon.History[0].Points) == 0 {
		t.Fatalf("monitoring from m2: %s", r.Body)
	}
	for _, n := range mon.Nodes {
		if n.Kind != "control" || n.Status != "online" || n.LastHeartbeatAt == nil || n.Host == nil {
			t.Fatalf("node %+v in %s", n, r.Body)
		}
	}
	checkErrorBody(t, second.Get("/api/v2/cluster/monitoring?historyStart=2026-01-02T00:00:00Z&historyEnd=2026-01-01T00:00:00Z", tok), 400, "invalid_query")
	var nodes struct {
		Rows []struct {
			NodeId, Kind, Status string
			Leader               bool
		}
	}
	first.Get("/api/v2/nodes", tok).JSON(t, &nodes)
	if len(nodes.Rows) != 2 || !nodes.Rows[0].Leader || nodes.Rows[1].Status != "online" {
		t.Fatalf("nodes %+v", nodes)
	}
	var rt struct {
		NodeId     string
		Pid        int
		Goroutines int
		RssBytes   int64
		OpenFiles  int
	}
	second.Get("/api/v2/cluster/monitoring/local-runtime", tok).JSON(t, &rt)
	if rt.NodeId != "m2" || rt.Pid == 0 || rt.Goroutines == 0 || rt.RssBytes == 0 || rt.OpenFiles <= 0 {
		t.Fatalf("local runtime %+v", rt)
	}
	// Without any media host the engine operations say so.
	checkErrorBody(t, first.Get("/api/v2/node/engine/process", tok), 409, "agent_unavailable")
	checkErrorBody(t, first.Get("/api/v2/node/rtp/leases", tok), 409, "agent_unavailable")
}
