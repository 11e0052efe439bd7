package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// TestTranscoderTemplates: create, list by scope, replace, delete, and the
// refusals (duplicate, unknown, options off the allow-list).
func TestTranscoderTemplates(t *testing.T) {
	ts := controlnode.StartNode(t, "tpl", "", "")
	tok := ts.Token("nodes.view", "nodes.manage")
	post := func(body string) controlnode.Response {
		return ts.Do("POST", "/api/v2/node/transcoder-templates", tok, "application/json", []byte(body))
	}
	if r := post(`{"templateName":"720p","videoCodec":"h264","audioCodec":"aac","width":1280,"height":720,"videoBitrateKbps":2500,` +
		`"extraArgs":["-preset","veryfast","-g","50"]}`); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if r := post(`{"templateName":"720p","mediaServerId":"media-1","videoCodec":"copy","audioCodec":"aac"}`); r.Status != 200 {
		t.Fatalf("same name in another scope: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, post(`{"templateName":"720p","videoCodec":"h264","audioCodec":"aac"}`), http.StatusConflict, "conflict")
	for _, bad := range []string{
		`{"templateName":"x","videoCodec":"h264","audioCodec":"aac","extraArgs":["-i","/etc/passwd"]}`,
		`{"templateName":"x","videoCodec":"h264","audioCodec":"aac","extraArgs":["-preset","fast;rm -rf /"]}`,
		`{"templateName":"x","videoCodec":"copy","audioCodec":"aac","width":640}`,
		`{"templateName":"x","videoCodec":"none","audioCodec":"none"}`,
		`{"templateName":"x","videoCodec":"h264","audioCodec":"aac","width":641,"height":360}`,
	} {
		checkErrorBody(t, post(bad), http.StatusBadRequest, "invalid_body")
	}
	var list struct {
		Rows []struct{ TemplateName, MediaServerId string }
	}
	ts.Get("/api/v2/node/transcoder-templates?mediaServerId=media-2", tok).JSON(t, &list)
	if len(list.Rows) != 1 || list.Rows[0].MediaServerId != "" {
		t.Fatalf("media-2 sees %+v", list.Rows)
	}
	ts.Get("/api/v2/node/transcoder-templates", tok).JSON(t, &list)
	if len(list.Rows) != 2 {
		t.Fatalf("all: %+v", list.Rows)
	}
	put := ts.Do("PUT", "/api/v2/node/transcoder-templates/720p", tok, "application/json", []byte(`{"templateName":"720p","videoCodec":"h265","audioCodec":"opus"}`))
	var tpl struct{ VideoCodec, UpdatedBy string }
	put.JSON(t, &tpl)
	if put.Status != 200 || tpl.VideoCodec != "h265" || tpl.UpdatedBy == "" {
		t.Fatalf("replace: %d %s", put.Status, put.Body)
	}
	checkErrorBody(
		t,
		ts.Do("PUT", "/api/v2/node/transcoder-templates/other", tok, "application/json", []byte(`{"templateName":"720p","videoCodec":"h265","audioCodec":"opus"}`)),
		http.StatusBadRequest,
		"invalid_body",
	)
	checkErrorBody(
		t,
		ts.Do("PUT", "/api/v2/node/transcoder-templates/none", tok, "application/json", []byte(`{"templateName":"none","videoCodec":"h265","audioCodec":"opus"}`)),
		http.StatusNotFound,
		"not_found",
	)
	if r := ts.Do("DELETE", "/api/v2/node/transcoder-templates/720p?mediaServerId=media-1", tok, "", nil); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, ts.Do("DELETE", "/api/v2/node/transcoder-templates/720p?mediaServerId=media-1", tok, "", nil), http.StatusNotFound, "not_found")
}
