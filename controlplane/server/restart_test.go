package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/clusterlink"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

func TestInternalRequestsCannotBeReplayedOrRetargeted(t *testing.T) {
	a := controlnode.StartNode(t, "ra", "", "")
	b := controlnode.StartNode(t, "rb", a.URL, a.KeyFile())
	keys, err := keyring.LoadOrCreate(a.KeyFile(), false)
	if err != nil {
		t.Fatal(err)
	}
	// Re-joining an existing member with its own address is a no-op, so the
	// request is safe to send for real.
	body, _ := json.Marshal(raftnode.JoinRequest{NodeID: "rb", RaftAddress: b.S.Node.RaftAddress(), HTTPAddress: b.URL})
	u, _ := url.Parse(a.URL + httpapi.JoinPath)
	headers := clusterlink.Sign(keys.LinkKeys()[0], "POST", u.Host, httpapi.JoinPath, body, time.Now())
	send := func(target string) int {
		req, _ := http.NewRequest("POST", target+httpapi.JoinPath, bytes.NewReader(body))
		req.Header = headers.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(a.URL); got != 200 {
		t.Fatalf("signed request: %d", got)
	}
	if got := send(a.URL); got != 401 {
		t.Fatalf("replayed request: %d, want 401", got)
	}
	if got := send(b.URL); got != 401 {
		t.Fatalf("request signed for another member: %d, want 401", got)
	}
}

func TestRestartOnSameDataDirKeepsIdentityAndDoesNotRejoin(t *testing.T) {
	a := controlnode.StartNode(t, "sa", "", "")
	b := controlnode.StartNode(t, "sb", a.URL, a.KeyFile())
	id := a.S.System.ClusterID(context.Background())
	cfg := b.S.Config
	if err := b.S.Shutdown(); err != nil {
		t.Fatal(err)
	}
	// The join URL now points nowhere: a restarting member must not need it.
	cfg.Join = "http://127.0.0.1:1"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := server.Start(ctx, cfg, zaptest.NewLogger(t).Named("sb-again"))
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer s.Shutdown()
	if err := s.Node.LinearizableBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.System.ClusterID(ctx); got != id || got == "" {
		t.Fatalf("cluster id after restart %q, want %q", got, id)
	}
	members, _ := s.Node.Members(ctx)
	if len(members) != 2 {
		t.Fatalf("members after restart: %+v", members)
	}
}
