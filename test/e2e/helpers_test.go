package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/cluster"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

func freeAddr(t *testing.T) string { return testkit.FreeAddr(t) }

// controlNode is a real control node in this process.
type controlNode struct {
	t     *testing.T
	s     *server.Server
	api   string
	token string
}

func startControlNode(t *testing.T, tune func(*config.Config)) *controlNode {
	t.Helper()
	cfg := cluster.NodeConfig(t, "cp1")
	if tune != nil {
		tune(&cfg)
	}
	s := controlnode.Start(t, cfg, zaptest.NewLogger(t).Named("cp1"))
	c := &controlNode{t: t, s: s, api: "http://" + s.HTTPAddr}
	c.token = c.newToken("*")
	return c
}

// newToken writes an API token record the way the security module does.
func (c *controlNode) newToken(perms ...string) string {
	tok, _ := cluster.WriteToken(c.t, c.s.Node, "e2e", perms...)
	return tok
}

// call sends a JSON request with the operator token and decodes the
// answer into out (when not nil); it returns the status.
func (c *controlNode) call(method, path string, body, out any) int {
	c.t.Helper()
	st, data := doJSON(c.t, c.api, c.token, method, path, body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			c.t.Fatalf("%s %s: %d %s: %v", method, path, st, data, err)
		}
	}
	return st
}

// doJSON sends one JSON request with a bearer token and returns the status
// and the body.
func doJSON(t *testing.T, api, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, api+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// events lists the outbox events of a name, oldest first.
func (c *controlNode) events(name string) []events.Envelope {
	resp, err := c.s.Node.Range(context.Background(), events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix)})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []events.Envelope
	for _, kv := range resp.KVs {
		var ev events.Envelope
		json.Unmarshal(kv.Value, &ev)
		if ev.EventName == name {
			out = append(out, ev)
		}
	}
	return out
}

// process is a child svc process with its output collected.
type process = testkit.Process

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	return testkit.StartProcess(t, bin, args...)
}

func tail(s string, n int) string { return testkit.Tail(s, n) }

func runProcess(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

func fileMode(t *testing.T, path string) os.FileMode {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// consoleSession is a browser's console login: its cookies and the CSRF
// token the login answer gave.
type consoleSession struct {
	t    *testing.T
	api  string
	http *http.Client
	csrf string
}

// consoleLogin creates an administrator and logs in as a browser would.
func consoleLogin(t *testing.T, c *controlNode) *consoleSession {
	t.Helper()
	const password = "e2e-console-Pa55word"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.s.Accounts.Bootstrap(ctx, account.Actor{Actor: audit.Actor{Type: "system", ID: "e2e"}}, "admin", password, "e2e administrator"); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	s := &consoleSession{t: t, api: c.api, http: &http.Client{Jar: jar, Timeout: 90 * time.Second}}
	var body struct{ CsrfToken string }
	if st, data := s.call("POST", "/api/v2/auth/login", map[string]string{"username": "admin", "password": password}, &body); st != 200 {
		t.Fatalf("console login: %d %s", st, data)
	}
	s.csrf = body.CsrfToken
	return s
}

// call sends one JSON request with the session's cookies and CSRF header.
func (s *consoleSession) call(method, path string, body, out any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.api+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.csrf != "" {
		req.Header.Set("X-Svc-Csrf-Token", s.csrf)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode, data
}
