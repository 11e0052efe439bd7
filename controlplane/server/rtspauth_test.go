package server

import (
	"strings"
	"testing"

	"github.com/svcplatform/svc/shared/digestauth"
)

func TestRTSPCredentials(t *testing.T) {
	logs := &logBuffer{}
	ts := startServerWith(t, "rtsp", "", "", nil, logs)
	admin := ts.token("*")
	save := func(body string) response {
		return ts.do("POST", "/api/v2/security/rtsp-auth", admin, "application/json", []byte(body))
	}
	checkErrorBody(t, save(`{"mediaServerId":"ms-1","username":"bad:name","password":"cam-secret-9"}`), 400, "invalid_body")
	checkErrorBody(t, save(`{"mediaServerId":"ms-1","username":"cam","password":"short"}`), 400, "invalid_body")
	r := save(`{"mediaServerId":"ms-1","username":"cam","password":"cam-secret-9","realm":"lab"}`)
	if r.status != 200 || strings.Contains(string(r.body), "cam-secret-9") || !strings.Contains(string(r.body), `"hasPassword":true`) {
		t.Fatalf("save: %d %s", r.status, r.body)
	}
	list := ts.get("/api/v2/security/rtsp-auth?mediaServerId=ms-1", admin)
	if !strings.Contains(string(list.body), `"username":"cam"`) || strings.Contains(string(list.body), "sealed") || strings.Contains(string(list.body), "cam-secret-9") {
		t.Fatalf("list: %s", list.body)
	}
	// The header the test builds passes an independent server-side check
	// with the real password, for both algorithms and with and without qop.
	for _, body := range []string{
		`{"mediaServerId":"ms-1","username":"cam","uri":"rtsp://127.0.0.1:8554/live/cam","nonce":"abc123"}`,
		`{"mediaServerId":"ms-1","username":"cam","uri":"rtsp://127.0.0.1:8554/live/cam","nonce":"abc123","algorithm":"SHA-256","qop":"none","method":"SETUP"}`,
	} {
		var res struct {
			Ok, Verified        bool
			AuthorizationHeader string
			Nonce, Realm        string
		}
		r := ts.do("POST", "/api/v2/security/rtsp-auth/test", admin, "application/json", []byte(body))
		r.json(t, &res)
		if !res.Ok || !res.Verified || res.Realm != "lab" || strings.Contains(string(r.body), "cam-secret-9") {
			t.Fatalf("test: %s", r.body)
		}
		method := "DESCRIBE"
		if strings.Contains(body, "SETUP") {
			method = "SETUP"
		}
		if _, err := digestauth.Verify(res.AuthorizationHeader, method, "cam-secret-9", "lab", "abc123"); err != nil {
			t.Fatalf("header does not verify with the real password: %v", err)
		}
		if _, err := digestauth.Verify(res.AuthorizationHeader, method, "wrong-secret", "lab", "abc123"); err == nil {
			t.Fatal("header verifies with a wrong password")
		}
	}
	checkErrorBody(
		t,
		ts.do("POST", "/api/v2/security/rtsp-auth/test", admin, "application/json", []byte(`{"mediaServerId":"ms-2","username":"cam","uri":"rtsp://x/y"}`)),
		404,
		"not_found",
	)
	if r := ts.do("DELETE", "/api/v2/security/rtsp-auth?mediaServerId=ms-1&username=cam", admin, "", nil); r.status != 200 ||
		!strings.Contains(string(r.body), `"action":"deleted"`) || !strings.Contains(string(r.body), `"target":"ms-1/cam"`) {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	checkErrorBody(t, ts.do("DELETE", "/api/v2/security/rtsp-auth?mediaServerId=ms-1&username=cam", admin, "", nil), 404, "not_found")
	ts.s.Shutdown()
	if strings.Contains(logs.String(), "cam-secret-9") {
		t.Fatal("the RTSP password appears in the logs")
	}
}
