package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

type wsFrame struct {
	Type     string
	Seq      int64
	Cursor   string
	Resumed  *bool
	Protocol string
	Event    *struct {
		EventID   string `json:"eventId"`
		EventName string `json:"eventName"`
	}
}

// dialRuntime opens the runtime-state WebSocket as a client would.
func dialRuntime(t *testing.T, ts *controlnode.Node, token, origin, cursor string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if origin != "" {
		h.Set("Origin", origin)
	}
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/api/v2/events/runtime/ws"
	if cursor != "" {
		u += "?cursor=" + cursor
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{events.RuntimeProtocol}})
}

func readFrame(t *testing.T, c *websocket.Conn) wsFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var f wsFrame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	return f
}

func emitEvent(t *testing.T, ts *controlnode.Node, name string) string {
	t.Helper()
	ev, _ := events.New(name, events.SourceMedia, ts.S.Config.NodeID, map[string]any{"k": name})
	op, _ := events.Op(ev)
	if _, err := ts.S.Node.Txn(t.Context(), store.TxnRequest{Then: []store.Op{op}}); err != nil {
		t.Fatal(err)
	}
	return ev.EventID
}

// TestRuntimeWebSocket: authentication failures answer 401/403/400 before
// the upgrade; a stream shows only what the credential may see; a
// reconnect with the last cursor resumes without a gap.
func TestRuntimeWebSocket(t *testing.T) {
	ts := controlnode.StartNode(t, "ws", "", "")
	streams := ts.Token("streams.view")
	for _, c := range []struct {
		name, token, origin, cursor string
		Status                      int
	}{
		{"no credential", "", "", "", 401},
		{"bad token", "svc_pat_nonsense", "", "", 401},
		{"foreign origin", streams, "https://evil.example", "", 403},
		{"malformed cursor", streams, "", "x.y", 400},
	} {
		_, resp, err := dialRuntime(t, ts, c.token, c.origin, c.cursor)
		if err == nil || resp == nil || resp.StatusCode != c.Status {
			t.Fatalf("%s: err %v, controlnode.Response %v, want %d", c.name, err, resp, c.Status)
		}
	}
	checkErrorBody(t, ts.Get("/api/v2/events/runtime/ws", streams), 400, "websocket_upgrade_required")
	var info struct {
		Path, Subprotocol string
		Families          []struct {
			Wildcard string
			Visible  bool
		}
	}
	ts.Get("/api/v2/events/runtime/info", streams).JSON(t, &info)
	visible := map[string]bool{}
	for _, f := range info.Families {
		visible[f.Wildcard] = f.Visible
	}
	if info.Path != "/api/v2/events/runtime/ws" || info.Subprotocol != events.RuntimeProtocol || !visible["media.stream.*"] || visible["recording.*"] {
		t.Fatalf("info = %+v", info)
	}

	conn, resp, err := dialRuntime(t, ts, streams, ts.URL, "")
	if err != nil {
		t.Fatalf("dial: %v %v", err, resp)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || conn.Subprotocol() != events.RuntimeProtocol {
		t.Fatalf("upgrade answered %d with subprotocol %q", resp.StatusCode, conn.Subprotocol())
	}
	if f := readFrame(t, conn); f.Type != "hello" || f.Seq != 0 || *f.Resumed {
		t.Fatalf("hello = %+v", f)
	}
	first := emitEvent(t, ts, events.MediaStreamOnline)
	emitEvent(t, ts, events.RecordingFileCompleted) // needs recordings.view: not shown
	second := emitEvent(t, ts, events.MediaStreamOffline)
	f1, f2 := readFrame(t, conn), readFrame(t, conn)
	if f1.Seq != 1 || f1.Event.EventID != first || f2.Seq != 2 || f2.Event.EventID != second {
		t.Fatalf("frames %+v %+v", f1, f2)
	}
	conn.Close(websocket.StatusNormalClosure, "")

	// While disconnected, more happens; the reconnect continues at 3.
	third := emitEvent(t, ts, events.MediaStreamOnline)
	fourth := emitEvent(t, ts, events.MediaStreamOffline)
	conn, _, err = dialRuntime(t, ts, streams, "", f2.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if f := readFrame(t, conn); f.Type != "hello" || !*f.Resumed || f.Seq != 2 {
		t.Fatalf("resumed hello = %+v", f)
	}
	for i, id := range []string{third, fourth} {
		if f := readFrame(t, conn); f.Type != "event" || f.Seq != int64(3+i) || f.Event.EventID != id {
			t.Fatalf("resumed frame %d = %+v, want seq %d event %s", i, f, 3+i, id)
		}
	}
	// Shutting the server down ends the stream with "going away"; the
	// client is reading, as clients do, so the close handshake completes.
	readErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _, err := conn.Read(ctx)
		readErr <- err
	}()
	ts.S.Shutdown()
	err = <-readErr
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway {
		t.Fatalf("after shutdown the read gave %v", err)
	}
}
