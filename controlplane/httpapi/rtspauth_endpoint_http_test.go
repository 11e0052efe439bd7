package httpapi_test

import (
	"strings"
	"testing"

	"github.com/svcplatform/svc/shared/digestauth"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

func TestRTSPCredentials(t *testing.T) {
	logs := &testkit.Output{}
	ts := controlnode.StartNodeWith(t, "rtsp", "", "", nil, logs)
	admin := ts.Token("*")
	save := func(body string) controlnode.Response {
		return ts.Do("POST", "/api/v2/security/rtsp-auth", admin, "application/json", []byte(body))
	}
	checkErrorBody(t, save(`{"mediaServerId":"ms-1","username":"bad:name","password":"cam-secret-9"}`), 400, "invalid_body")
	checkErrorBody(t, save(`{"mediaServerId":"ms-1","username":"cam","password":"short"}`), 400, "invalid_body")
	r := save(`{"mediaServerId":"ms-1","username":"cam","password":"cam-secret-9","realm":"lab"}`)
	if r.Status != 200 || strings.Contains(string(r.Body), "cam-secret-9") || !strings.Contains(string(r.Body), `"hasPassword":true`) {
		t.Fatalf("save: %d %s", r.Status, r.Body)
	}
	list := ts.Get("/api/v2/security/rtsp-auth?mediaServerId=ms-1", admin)
	if !strings.Contains(string(list.Body), `"username":"cam"`) || strings.Contains(string(list.Body), "sealed") || strings.Contains(string(list.Body), "cam-secret-9") {
		t.Fatalf("list: %s", list.Body)
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
		r := ts.Do("POST", "/api/v2/security/rtsp-auth/test", admin, "application/json", []byte(body))
		r.JSON(t, &res)
		if !res.Ok || !res.Verified || res.Realm != "lab" || strings.Contains(string(r.Body), "cam-secret-9") {
			t.Fatalf("test: %s", r.Body)
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
		ts.Do("POST", "/api/v2/security/rtsp-auth/test", admin, "application/json", []byte(`{"mediaServerId":"ms-2","username":"cam","uri":"rtsp://x/y"}`)),
		404,
		"not_found",
	)
	if r := ts.Do("DELETE", "/api/v2/security/rtsp-auth?mediaServerId=ms-1&username=cam", admin, "", nil); r.Status != 200 ||
		!strings.Contains(string(r.Body), `"action":"deleted"`) || !strings.Contains(string(r.Body), `"target":"ms-1/cam"`) {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, ts.Do("DELETE", "/api/v2/security/rtsp-auth?mediaServerId=ms-1&username=cam", admin, "", nil), 404, "not_found")
	ts.S.Shutdown()
	if strings.Contains(logs.String(), "cam-secret-9") {
		t.Fatal("the RTSP password appears in the logs")
	}
}
