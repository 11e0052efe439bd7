package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/cluster"
)

// testServer is a real control node on loopback ports.
type testServer struct {
	t   *testing.T
	s   *Server
	url string
}

// startServer starts a control node; join is the API URL of a member or "".
func startServer(t *testing.T, id, join, keyFile string) *testServer {
	t.Helper()
	return startServerWith(t, id, join, keyFile, nil, nil)
}

// logBuffer collects every log line of a node, for tests that grep them.
type logBuffer = testkit.Output

// startServerWith lets a test adjust the configuration and capture logs
// (at debug level, so nothing escapes the grep).
func startServerWith(t *testing.T, id, join, keyFile string, tune func(*config.Config), logs *logBuffer) *testServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	log := zaptest.NewLogger(t).Named(id)
	if logs != nil {
		enc := zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig())
		log = zap.New(zapcore.NewTee(log.Core(), zapcore.NewCore(enc, logs, zapcore.DebugLevel))).Named(id)
	}
	cfg := cluster.NodeConfig(t, id)
	cfg.Join, cfg.ClusterKeyFile = join, keyFile
	cfg.NodeHeartbeatTTL, cfg.CommandVisibility = config.Defaults().NodeHeartbeatTTL, config.Defaults().CommandVisibility
	if tune != nil {
		tune(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := Start(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	ts := &testServer{t: t, s: s, url: "http://" + s.HTTPAddr}
	// Wait for the node's own start-up writes (cluster identity, member
	// record) so tests that compare revisions see a quiet store.
	deadline := time.Now().Add(20 * time.Second)
	for {
		kv, _, _ := store.Get(context.Background(), s.Node, raftnode.MembersPrefix+id, store.Local)
		port, _, _ := store.Get(context.Background(), s.Node, agentPortsPrefix+id, store.Local)
		ca, _, _ := store.Get(context.Background(), s.Node, clusterca.Key, store.Local)
		if s.System.ClusterID(context.Background()) != "" && kv != nil && port != nil && (ca != nil || join != "") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node did not finish its start-up writes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ts
}

func (ts *testServer) keyFile() string { return filepath.Join(ts.s.Config.DataDir, "cluster.key") }

// token writes an API token record through the store, the way the security
// module will, and returns the token.
func (ts *testServer) token(perms ...string) string {
	ts.t.Helper()
	tok, _ := cluster.WriteToken(ts.t, ts.s.Node, "test", perms...)
	return tok
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("status %d, body %q: %v", r.status, r.body, err)
	}
}

func (ts *testServer) do(method, path, token, contentType string, body []byte) response {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func (ts *testServer) get(path, token string) response { return ts.do("GET", path, token, "", nil) }

func txnPut(key, val string) store.TxnRequest {
	return store.TxnRequest{Then: []store.Op{store.Put(key, []byte(val))}}
}

// startServerExpectError tries to start a node that joins with its own,
// different cluster key and returns the error.
func startServerExpectError(t *testing.T, id, join, keyFile string) error {
	t.Helper()
	if _, err := keyring.LoadOrCreate(keyFile, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := cluster.NodeConfig(t, id)
	cfg.Join, cfg.ClusterKeyFile = join, keyFile
	s, err := Start(ctx, cfg, zaptest.NewLogger(t).Named(id))
	if err == nil {
		s.Shutdown()
	}
	return err
}

func bytesReader(s string) *bytes.Reader { return bytes.NewReader([]byte(s)) }

func containsText(s, sub string) bool { return bytes.Contains([]byte(s), []byte(sub)) }
