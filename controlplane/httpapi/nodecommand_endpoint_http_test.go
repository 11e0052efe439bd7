package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestNodeCommandsThroughTheAPI: commands for an enrolled-to-be node are
// queued, filtered and canceled; the generic create cannot be used to get
// around the stricter permission of a dedicated operation.
func TestNodeCommandsThroughTheAPI(t *testing.T) {
	ts := controlnode.StartNode(t, "cmds", "", "")
	super := ts.Token("*")
	r := ts.Do("POST", "/api/v2/system/lifecycle/agents/media-9/enrollment", super, "", nil)
	if r.Status != 200 {
		t.Fatalf("enrollment without a body: %d %s", r.Status, r.Body)
	}
	operator := ts.Token("nodes.manage", "nodes.view")
	create := func(tok, body string) controlnode.Response {
		return ts.Do("POST", "/api/v2/nodes/media-9/commands", tok, "application/json", []byte(body))
	}
	for _, typ := range []string{"host.tuning.apply", "engine.config.raw.apply", "agent.restart"} {
		checkErrorBody(t, create(operator, `{"commandType":"`+typ+`"}`), http.StatusForbidden, "permission_denied")
	}
	checkErrorBody(t, create(operator, `{"commandType":"no.such"}`), http.StatusBadRequest, "invalid_body")
	checkErrorBody(t, ts.Do("POST", "/api/v2/nodes/ghost/commands", operator, "application/json", []byte(`{"commandType":"agent.ping"}`)), http.StatusNotFound, "not_found")
	var cmd struct{ CommandId, Status, IdempotencyKey string }
	create(operator, `{"commandType":"agent.ping","idempotencyKey":"k1","reason":"nightly check"}`).JSON(t, &cmd)
	if cmd.Status != "Pending" || cmd.IdempotencyKey != "k1" {
		t.Fatalf("created %+v", cmd)
	}
	var again struct{ CommandId string }
	create(operator, `{"commandType":"agent.ping","idempotencyKey":"k1"}`).JSON(t, &again)
	if again.CommandId != cmd.CommandId {
		t.Fatal("the same idempotency key made a second command")
	}
	var list struct {
		Total int
		Rows  []struct{ CommandId string }
	}
	ts.Get("/api/v2/node/commands?nodeId=media-9&status=Pending&keyword=nightly&localOnly=true&sinceHours=1", operator).JSON(t, &list)
	if list.Total != 1 || list.Rows[0].CommandId != cmd.CommandId {
		t.Fatalf("list %+v", list)
	}
	var stats struct {
		Total    int
		ByStatus map[string]int
	}
	ts.Get("/api/v2/node/commands/stats?nodeId=media-9", operator).JSON(t, &stats)
	if stats.Total != 1 || stats.ByStatus["Pending"] != 1 || len(stats.ByStatus) != 7 {
		t.Fatalf("stats %+v", stats)
	}
	var canceled struct {
		Status string
		Error  struct{ Code string }
	}
	ts.Do("POST", "/api/v2/node/commands/"+cmd.CommandId+"/cancel", operator, "application/json", []byte(`{"reason":"not needed"}`)).JSON(t, &canceled)
	if canceled.Status != "Canceled" || canceled.Error.Code != "canceled" {
		t.Fatalf("cancel %+v", canceled)
	}
	checkErrorBody(t, ts.Do("POST", "/api/v2/node/commands/"+cmd.CommandId+"/cancel", operator, "", nil), http.StatusConflict, "conflict")
	var detail struct {
		History []struct{ Status string }
	}
	ts.Get("/api/v2/node/commands/"+cmd.CommandId+"/detail", operator).JSON(t, &detail)
	if len(detail.History) != 2 || detail.History[1].Status != "Canceled" {
		t.Fatalf("history %+v", detail.History)
	}
	checkErrorBody(t, ts.Get("/api/v2/node/commands?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", operator), http.StatusBadRequest, "invalid_query")
}
