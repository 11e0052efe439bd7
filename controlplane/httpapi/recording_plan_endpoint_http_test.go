package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestRecordingPlansEndpoints: a plan through the API, evaluated on both
// sides of Berlin's spring daylight-saving change, its template, its
// permissions, and the refusals of a time without a zone or a zone that
// does not exist.
func TestRecordingPlansEndpoints(t *testing.T) {
	ts := controlnode.StartNode(t, "plans", "", "")
	manage, view := ts.Token("recordings.manage", "recordings.view", "recordings.delete"), ts.Token("recordings.view")
	post := func(path, tok string, body any) controlnode.Response {
		b, _ := json.Marshal(body)
		return ts.Do("POST", path, tok, "application/json", b)
	}
	plan := map[string]any{"name": "Sunday mornings", "timeZone": "Europe/Berlin", "channelIds": []string{}, "retentionDays": 30,
		"weekly": []map[string]string{{"day": "sunday", "start": "08:00", "end": "09:00"}}}
	if r := post("/api/v2/recording/plans", view, plan); r.Status != 403 {
		t.Fatalf("create with recordings.view: %d", r.Status)
	}
	bad := map[string]any{"name": "x", "timeZone": "Mars/Olympus", "weekly": plan["weekly"]}
	if r := post("/api/v2/recording/plans", manage, bad); r.Status != 400 {
		t.Fatalf("an unknown zone: %d %s", r.Status, r.Body)
	}
	for _, days := range []int{-1, 3651} {
		long := map[string]any{"name": "x", "timeZone": "UTC", "weekly": plan["weekly"], "retentionDays": days}
		if r := post("/api/v2/recording/plans", manage, long); r.Status != 400 {
			t.Fatalf("retentionDays %d: %d %s", days, r.Status, r.Body)
		}
	}
	r := post("/api/v2/recording/plans", manage, plan)
	var p struct {
		PlanID        string
		Enabled       bool
		RetentionDays int
	}
	r.JSON(t, &p)
	if r.Status != 200 || !p.Enabled || p.RetentionDays != 30 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	for at, hit := range map[string]bool{"2026-03-22T07:30:00Z": true, "2026-03-29T06:30:00Z": true, "2026-03-29T07:30:00Z": false} {
		var ev struct {
			Hit       bool
			LocalTime string
		}
		r := ts.Get("/api/v2/recording/plans/"+p.PlanID+"/evaluate?at="+at, view)
		r.JSON(t, &ev)
		if r.Status != 200 || ev.Hit != hit {
			t.Errorf("evaluate at %s: %d %s", at, r.Status, r.Body)
		}
	}
	if r := ts.Get("/api/v2/recording/plans/"+p.PlanID+"/evaluate?at=2026-03-29T08:30:00", view); r.Status != 400 {
		t.Fatalf("a time without a zone: %d %s", r.Status, r.Body)
	}
	if r := post("/api/v2/recording/plans/"+p.PlanID+"/enabled?enabled=false", manage, nil); r.Status != 200 {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	var list struct {
		Total int
		Rows  []struct{ Enabled bool }
	}
	ts.Get("/api/v2/recording/plans?name=sunday", view).JSON(t, &list)
	if list.Total != 1 || list.Rows[0].Enabled {
		t.Fatalf("list: %+v", list)
	}
	var tmpl struct {
		TimeZone string
		Weekly   []any
	}
	ts.Get("/api/v2/recording/plan-template", view).JSON(t, &tmpl)
	if tmpl.TimeZone != "UTC" || len(tmpl.Weekly) != 5 {
		t.Fatalf("template: %+v", tmpl)
	}
	if r := ts.Do("DELETE", "/api/v2/recording/plans/"+p.PlanID, manage, "", nil); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := ts.Get("/api/v2/recording/plans/"+p.PlanID, view); r.Status != 404 {
		t.Fatalf("after delete: %d", r.Status)
	}
}
