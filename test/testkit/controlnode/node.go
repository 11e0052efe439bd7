package controlnode

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

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/cluster"
)

// Node is a control node on loopback ports with an HTTP client for its
// API: what the endpoint tests talk to.
type Node struct {
	t   testing.TB
	S   *server.Server
	URL string
}

// StartNode starts a control node named id; join is the API URL of a
// member (and keyFile the cluster key it shares) or "" to found a cluster.
func StartNode(t testing.TB, id, join, keyFile string) *Node {
	t.Helper()
	return StartNodeWith(t, id, join, keyFile, nil, nil)
}

// StartNodeWith lets a test adjust the configuration and capture the
// node's log (at debug level, so nothing escapes a grep). It returns once
// the node's own start-up writes are in its store, so tests that compare
// revisions see a quiet store.
func StartNodeWith(t testing.TB, id, join, keyFile string, tune func(*config.Config), logs *testkit.Output) *Node {
	t.Helper()
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
	s := Start(t, cfg, log)
	testkit.Eventually(t, 20*time.Second, "the node's start-up writes", func() bool { return s.StartupWritten(context.Background()) })
	return &Node{t: t, S: s, URL: "http://" + s.HTTPAddr}
}

// StartExpectError starts a node that joins with its own, different
// cluster key in keyFile and returns the error it fails with.
func StartExpectError(t testing.TB, id, join, keyFile string) error {
	t.Helper()
	if _, err := keyring.LoadOrCreate(keyFile, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := cluster.NodeConfig(t, id)
	cfg.Join, cfg.ClusterKeyFile = join, keyFile
	s, err := server.Start(ctx, cfg, zaptest.NewLogger(t).Named(id))
	if err == nil {
		s.Shutdown()
	}
	return err
}

// KeyFile is the cluster key file a node joining this one needs.
func (n *Node) KeyFile() string { return filepath.Join(n.S.Config.DataDir, "cluster.key") }

// Token writes an API token with perms through the store and returns it.
func (n *Node) Token(perms ...string) string {
	n.t.Helper()
	tok, _ := cluster.WriteToken(n.t, n.S.Node, "test", perms...)
	return tok
}

// Response is an answer of the node's API, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it does not decode.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("status %d, body %q: %v", r.Status, r.Body, err)
	}
}

// Do sends a request with a bearer token (when not "") and returns the
// answer; redirects are returned, not followed.
func (n *Node) Do(method, path, token, contentType string, body []byte) Response {
	n.t.Helper()
	req, err := http.NewRequest(method, n.URL+path, bytes.NewReader(body))
	if err != nil {
		n.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return n.Send(req)
}

// Send sends a request the test built (its own headers, cookies) and
// returns the answer; redirects are returned, not followed.
func (n *Node) Send(req *http.Request) Response {
	n.t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// Get is Do for a GET without a body.
func (n *Node) Get(path, token string) Response { return n.Do("GET", path, token, "", nil) }
