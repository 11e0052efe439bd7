// Package cluster starts what the control-plane suites need on top of
// testkit: a control node's test configuration, API tokens written as a
// setup step, and the node agent's arguments.
package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/test/testkit"
)

// NodeConfig is a control node's configuration for a test: id, a fresh
// data directory, loopback listeners on ports the system picks (the node
// reads them back, so no other process can take one between choosing and
// binding it; the started server's Config names them), and short heartbeat
// and delivery deadlines.
func NodeConfig(t testing.TB, id string) config.Config {
	t.Helper()
	cfg := config.Defaults()
	cfg.NodeID, cfg.DataDir = id, t.TempDir()
	cfg.HTTPAddr, cfg.RaftAddr, cfg.AgentAddr = testkit.AnyPort, testkit.AnyPort, testkit.AnyPort
	cfg.ShutdownGrace = 2 * time.Second
	cfg.NodeHeartbeatTTL, cfg.CommandVisibility = 3*time.Second, 2*time.Second
	return cfg
}

// WriteToken writes an API token record through the store, as a test's
// setup step rather than through the API, owned by owner (a user id, or a
// name of no user), and waits until every member has it. It returns the
// token and its id.
func WriteToken(t testing.TB, node *raftnode.Node, owner string, perms ...string) (token, id string) {
	t.Helper()
	tok, err := apitoken.New()
	if err != nil {
		t.Fatal(err)
	}
	id = fmt.Sprintf("t-%d", time.Now().UnixNano())
	op, err := apitoken.Put(apitoken.Record{TokenID: id, Name: "test", OwnerUserID: owner, Digest: apitoken.Digest(tok), TokenPrefix: tok[:12],
		Permissions: perms, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{op}})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.WaitMembersApplied(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	return tok, id
}

// AgentArgs are the arguments of `svc agent run` for an enrolled agent in
// dataDir, on loopback ports of its own, with short intervals for tests.
func AgentArgs(t testing.TB, dataDir string) []string {
	rtp := testkit.FreeRTPRange(t)
	return []string{"agent", "run", "--data-dir", dataDir, "--log-level", "debug",
		"--engine-control-addr", testkit.FreeAddr(t), "--engine-http-addr", testkit.FreeAddr(t), "--engine-rtsp-addr", testkit.FreeAddr(t),
		"--engine-webrtc-addr", testkit.FreeAddr(t), "--rtp-port-min", strconv.Itoa(rtp), "--rtp-port-max", strconv.Itoa(rtp + 99), "--sysctl-dir", filepath.Join(dataDir, "sysctl.d"),
		"--heartbeat-interval", "500ms", "--poll-wait", "5s", "--engine-backoff-min", "500ms"}
}
