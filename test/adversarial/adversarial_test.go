// Package adversarial is the security regression suite of issue 15: each
// TestAttackNN performs one attack of the issue through the public API of
// real nodes (control nodes in this process, the node agent and its engine
// as processes, GStreamer as the camera, nginx as the reverse proxy) and
// asserts that it fails with the contract's error. The permission matrix
// and the bad-input tests stay in controlplane/server
// (TestPermissionMatrix, TestBadInputEverywhere).
package adversarial

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/cluster"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// node is a real control node in this process with its log captured.
type node struct {
	t    *testing.T
	s    *server.Server
	api  string
	logs *logBuffer
	// tokenIDs maps the tokens token and tokenOwnedBy made to their ids.
	tokenIDs map[string]string
}

// logBuffer keeps every log line of a node (debug level included).
type logBuffer = testkit.Output

func freeAddr(t testing.TB) string { return testkit.FreeAddr(t) }

// startNode starts a control node; join is a member's API URL or "", with
// that member's key file.
func startNode(t *testing.T, id, join, keyFile string, tune func(*config.Config)) *node {
	t.Helper()
	logs := &logBuffer{}
	enc := zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig())
	log := zap.New(zapcore.NewTee(zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel)).Core(), zapcore.NewCore(enc, logs, zapcore.DebugLevel))).Named(id)
	cfg := cluster.NodeConfig(t, id)
	cfg.Join, cfg.ClusterKeyFile = join, keyFile
	if tune != nil {
		tune(&cfg)
	}
	s := controlnode.Start(t, cfg, log)
	n := &node{t: t, s: s, api: "http://" + s.HTTPAddr, logs: logs, tokenIDs: map[string]string{}}
	return n
}

// token writes an API token record as a setup step (not part of any
// attack): perms as given, owned by no console user.
func (n *node) token(perms ...string) string {
	n.t.Helper()
	return n.tokenOwnedBy("setup", perms...)
}

// tokenOwnedBy writes a token record owned by a console user, the way the
// user's own session would create it.
func (n *node) tokenOwnedBy(owner string, perms ...string) string {
	n.t.Helper()
	tok, id := cluster.WriteToken(n.t, n.s.Node, owner, perms...)
	n.tokenIDs[tok] = id
	return tok
}

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("status %d, body %q: %v", a.status, a.body, err)
	}
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, bytes.TrimSpace(a.body)) }

// refused asserts the contract's error: the status, the code, a message
// and the trace id of the header.
func refused(t *testing.T, what string, a answer, status int, code string) {
	t.Helper()
	var e struct{ Code, Message, TraceID string }
	json.Unmarshal(a.body, &e)
	if a.status != status || e.Code != code || e.Message == "" || e.TraceID == "" || a.header.Get("X-Trace-Id") != e.TraceID {
		t.Fatalf("%s: got %s, want %d %s", what, a, status, code)
	}
}

// request is one API request; header adds headers.
type request struct {
	method, path, token string
	body                any
	header              http.Header
}

var client = &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send makes a request to base.
func send(t *testing.T, base string, r request) answer {
	t.Helper()
	var rd io.Reader
	if r.body != nil {
		b, ok := r.body.([]byte)
		if !ok {
			b, _ = json.Marshal(r.body)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(r.method, base+r.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// call sends a JSON request to the node with a bearer token.
func (n *node) call(method, path, token string, body any) answer {
	n.t.Helper()
	return send(n.t, n.api, request{method: method, path: path, token: token, body: body})
}

// bootstrap creates the first super administrator over loopback and
// returns its user id.
func (n *node) bootstrap(user, password string) string {
	n.t.Helper()
	a := n.call("POST", "/api/v2/auth/bootstrap", "", map[string]string{"username": user, "password": password})
	if a.status != 200 {
		n.t.Fatalf("bootstrap: %s", a)
	}
	var u struct{ UserID string }
	a.decode(n.t, &u)
	return u.UserID
}

// createUser makes a console user with the given roles through the API.
func (n *node) createUser(admin, user, password string, roles ...string) string {
	n.t.Helper()
	a := n.call("POST", "/api/v2/security/users", admin, map[string]any{"username": user, "password": password, "roleIds": roles})
	if a.status != 200 {
		n.t.Fatalf("create user %s: %s", user, a)
	}
	var u struct{ UserID string }
	a.decode(n.t, &u)
	return u.UserID
}

// createRole makes a custom role through the API.
func (n *node) createRole(admin, name string, perms ...string) string {
	n.t.Helper()
	a := n.call("POST", "/api/v2/security/roles", admin, map[string]any{"name": name, "permissions": perms})
	if a.status != 200 {
		n.t.Fatalf("create role %s: %s", name, a)
	}
	var r struct{ RoleID string }
	a.decode(n.t, &r)
	return r.RoleID
}

// console is a browser session of one user on one node: its cookies and
// CSRF token.
type console struct {
	t       *testing.T
	base    string
	cookies []*http.Cookie
	csrf    string
}

// login opens a console session; it fails the test when the login fails.
func login(t *testing.T, base, user, password string) *console {
	t.Helper()
	c, a := tryLogin(t, base, user, password, nil)
	if c == nil {
		t.Fatalf("login %s: %s", user, a)
	}
	return c
}

// tryLogin attempts a login with extra body fields (a captcha).
func tryLogin(t *testing.T, base, user, password string, extra map[string]string) (*console, answer) {
	t.Helper()
	body := map[string]string{"username": user, "password": password}
	for k, v := range extra {
		body[k] = v
	}
	a := send(t, base, request{method: "POST", path: "/api/v2/auth/login", body: body})
	if a.status != 200 {
		return nil, a
	}
	var s struct{ CsrfToken string }
	a.decode(t, &s)
	resp := http.Response{Header: a.header}
	return &console{t: t, base: base, cookies: resp.Cookies(), csrf: s.CsrfToken}, a
}

func (c *console) do(method, path string, body any) answer {
	c.t.Helper()
	h := http.Header{"X-Svc-Csrf-Token": {c.csrf}}
	for _, ck := range c.cookies {
		if strings.HasPrefix(path, ck.Path) {
			h.Add("Cookie", ck.Name+"="+ck.Value)
		}
	}
	return send(c.t, c.base, request{method: method, path: path, body: body, header: h})
}

// auditRows lists the audit records of an event type through the API.
type auditRow struct {
	EventType, Outcome, ActorType, ActorID, ClientAddress, Target, Message string
}

func (n *node) audit(token, eventType string) []auditRow {
	n.t.Helper()
	var page struct {
		Total int
		Rows  []auditRow
	}
	a := n.call("GET", "/api/v2/security/audit?pageSize=200&eventType="+eventType, token, nil)
	if a.status != 200 {
		n.t.Fatalf("audit: %s", a)
	}
	a.decode(n.t, &page)
	return page.Rows
}

// storeAll ranges over every key.
func storeAll() store.RangeOptions { return store.RangeOptions{End: "\x00"} }
