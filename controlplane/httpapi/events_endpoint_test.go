package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/events/eventstest"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/store"
)

// authFunc is an Authenticator made of a function.
type authFunc func(r *http.Request, ip net.IP) (*identity.Identity, error)

func (f authFunc) Authenticate(r *http.Request, ip net.IP) (*identity.Identity, error) {
	return f(r, ip)
}

// TestRuntimeStreamFollowsTheCredential: at each keep-alive the credential
// is checked again; fewer permissions filter more, none ends the stream
// with 1008.
func TestRuntimeStreamFollowsTheCredential(t *testing.T) {
	node, _ := eventstest.OpenNode(t, events.OutboxIndex)
	var perms atomic.Pointer[[]string]
	set := func(p ...string) { perms.Store(&p) }
	set("nodes.view", "streams.view")
	auth := authFunc(func(*http.Request, net.IP) (*identity.Identity, error) {
		p := *perms.Load()
		if len(p) == 0 {
			return nil, errors.New("revoked")
		}
		return &identity.Identity{Kind: identity.KindAPIToken, CredentialID: "t", Permissions: p}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &eventEndpoints{events: &events.Service{Store: node, Reader: node.State(), NodeID: "n1"}, auth: auth,
		sockets: &RuntimeSockets{Ctx: ctx}, log: zaptest.NewLogger(t), ping: 50 * time.Millisecond}
	gin.SetMode(gin.ReleaseMode)
	g := gin.New()
	g.GET("/ws", func(c *gin.Context) {
		id, _ := auth.Authenticate(c.Request, nil)
		c.Request = c.Request.WithContext(identity.With(c.Request.Context(), id))
		if _, err := e.OpenRuntimeStateWebSocket(c, contract.OpenRuntimeStateWebSocketRequestObject{}); err != nil {
			c.AbortWithStatus(http.StatusBadRequest)
		}
	})
	srv := httptest.NewServer(g)
	defer srv.Close()
	defer e.sockets.Wait()
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	read := func() string {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		_, b, err := conn.Read(rctx)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	}
	emit := func(name string) string {
		ev, _ := events.New(name, events.SourceMedia, "n1", map[string]any{})
		op, _ := events.Op(ev)
		if _, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
			t.Fatal(err)
		}
		return ev.EventID
	}
	if m := read(); !strings.Contains(m, `"type":"hello"`) {
		t.Fatalf("first frame %s", m)
	}
	if id := emit(events.MediaServerStarted); !strings.Contains(read(), id) {
		t.Fatal("a visible event was not sent")
	}
	set("streams.view")                // nodes.view taken away
	time.Sleep(200 * time.Millisecond) // a few keep-alives
	emit(events.MediaServerStopped)
	if id := emit(events.MediaStreamOnline); !strings.Contains(read(), id) {
		t.Fatal("after losing nodes.view the next frame must be the stream event")
	}
	set() // revoked
	if m := read(); !strings.Contains(m, "StatusPolicyViolation") {
		t.Fatalf("after revocation the stream must end with close code 1008, got %s", m)
	}
}
