// Package controlnode starts a real control node inside a test process:
// the one way the endpoint, e2e and adversarial tests get one (the server
// package's tests too, from the external server_test package).
package controlnode

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/server"
)

// Start starts a control node with cfg (from NodeConfig, adjusted) and
// log until the test ends, and returns once it serves; a founding node
// has also made the cluster CA, which agents and their engines need.
func Start(t testing.TB, cfg config.Config, log *zap.Logger) *server.Server {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := server.Start(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	if cfg.Join == "" {
		ca := &clusterca.Authority{Store: s.Node, Keys: s.Keys}
		if _, err := ca.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
