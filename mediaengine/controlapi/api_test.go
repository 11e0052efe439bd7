package controlapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/mediaengine/proxy"
	"github.com/svcplatform/svc/shared/engineapi"
)

// The requests here are refused or answered by the API and the real parts
// alone (the assembled engine is tested through this API in mediaengine's
// control tests), so no Engine is given.
func newAPI(t *testing.T) http.Handler {
	h := hub.New(hub.Config{}, zap.NewNop())
	t.Cleanup(h.Close)
	return Handler("s3cret", Parts{Hub: h, Players: player.NewRegistry(), Proxies: proxy.NewRegistry(h, map[string]proxy.Puller{}, zap.NewNop()),
		Log: zap.NewNop()})
}

func call(t *testing.T, api http.Handler, method, path, auth, body string) (int, engineapi.Error) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	var e engineapi.Error
	if rec.Code >= 400 {
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
			t.Fatalf("%s %s: error body %q: %v", method, path, rec.Body, err)
		}
	}
	return rec.Code, e
}

func TestEveryRouteNeedsTheSecret(t *testing.T) {
	api := newAPI(t)
	for _, auth := range []string{"", "Bearer wrong", "s3cret", "Basic s3cret"} {
		for _, route := range [][2]string{{"GET", engineapi.PathStreams}, {"POST", engineapi.PathStreamClose}, {"GET", "/nowhere"}} {
			if st, e := call(t, api, route[0], route[1], auth, "{}"); st != 401 || e.Code != engineapi.CodeUnauthorized {
				t.Errorf("%s %s with %q: %d %s", route[0], route[1], auth, st, e.Code)
			}
		}
	}
}

func TestRequestsAreCheckedBeforeTheyReachTheParts(t *testing.T) {
	api := newAPI(t)
	const auth = "Bearer s3cret"
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/api/v1/nowhere", "", 404, engineapi.CodeNotFound},
		{"POST", engineapi.PathStreamClose, `{"app":"live","stream":"a","typo":1}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathStreamClose, `{"app":"live","stream":"a"} {}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathStreamClose, `{"app":"live"}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathStreamClose, `{"app":"live","stream":"a"}`, 404, engineapi.CodeStreamNotFound},
		{"POST", engineapi.PathPlayersKick, `{}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathPlayersKick, `{"playerId":"p1"}`, 404, engineapi.CodeNotFound},
		{"POST", engineapi.PathProxies, `{"id":"x","url":"gopher://h/x","app":"live","stream":"x"}`, 400, engineapi.CodeUnsupported},
		{"DELETE", "/api/v1/proxies/none", "", 404, engineapi.CodeProxyNotFound},
		{"POST", engineapi.PathSmokeTestRTSP, `{"url":"http://cam/x"}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathSmokeTestRTSP, `{"url":"rtsp://cam/x","transport":"sctp"}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathRecordings, `{"app":"live"}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathRecordings, `{"app":"live","stream":"a","segmentSeconds":86401}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathRecordingFilesDelete, `{"fileIds":[]}`, 400, engineapi.CodeInvalidBody},
		{"POST", engineapi.PathRecordingCutMerge, `{"taskId":"t","spans":[{"fileId":"f","fromMs":-1,"toMs":5}]}`, 400, engineapi.CodeInvalidBody},
	} {
		st, e := call(t, api, c.method, c.path, auth, c.body)
		if st != c.status || e.Code != c.code {
			t.Errorf("%s %s %s: %d %q (%s), want %d %q", c.method, c.path, c.body, st, e.Code, e.Message, c.status, c.code)
		}
	}
}
