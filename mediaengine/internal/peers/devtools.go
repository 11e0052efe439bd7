package peers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/svcplatform/svc/test/peers/chromium"
)

// Browser is a headless Chromium whose page a test reads through the
// DevTools protocol (Runtime.evaluate), so the page under test needs no
// hook of its own to report what it shows.
type Browser struct {
	*Process
	conn *websocket.Conn
	id   atomic.Int64
}

var devtoolsLine = regexp.MustCompile(`DevTools listening on (ws://127\.0\.0\.1:\d+)/devtools/browser/`)

// StartChromiumDevTools opens url as StartChromium does, with the DevTools
// protocol on a loopback port, and connects to the page.
func StartChromiumDevTools(t testing.TB, url string) *Browser {
	t.Helper()
	p := Start(t, chromium.Path, chromium.Args(t.TempDir(), url,
		append([]string{"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0"}, chromium.WebRTCFlags...)...)...)
	var base string
	deadline := time.Now().Add(60 * time.Second)
	for base == "" {
		if m := devtoolsLine.FindStringSubmatch(p.Output()); m != nil {
			base = "http" + strings.TrimPrefix(m[1], "ws")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Chromium did not open DevTools within 60 s: %s", p.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var page string
	for page == "" {
		var targets []struct{ Type, URL, WebSocketDebuggerURL string }
		if resp, err := http.Get(base + "/json/list"); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		for _, tg := range targets {
			if tg.Type == "page" && tg.URL == url {
				page = tg.WebSocketDebuggerURL
			}
		}
		if page == "" {
			if time.Now().After(deadline) {
				t.Fatalf("Chromium lists no page for %s: %s", url, p.Output())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, page, nil)
	if err != nil {
		t.Fatalf("DevTools: %v", err)
	}
	conn.SetReadLimit(8 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &Browser{Process: p, conn: conn}
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value into out.
func (b *Browser) Eval(expr string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := b.id.Add(1)
	req, _ := json.Marshal(map[string]any{"id": id, "method": "Runtime.evaluate",
		"params": map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}})
	if err := b.conn.Write(ctx, websocket.MessageText, req); err != nil {
		return fmt.Errorf("devtools: %w", err)
	}
	for {
		_, msg, err := b.conn.Read(ctx)
		if err != nil {
			return fmt.Errorf("devtools: %w", err)
		}
		var resp struct {
			ID     int64 `json:"id"`
			Result struct {
				Result struct {
					Value json.RawMessage `json:"value"`
				} `json:"result"`
				ExceptionDetails *struct {
					Text string `json:"text"`
				} `json:"exceptionDetails"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(msg, &resp) != nil || resp.ID != id {
			continue // an event, or another call's answer
		}
		switch {
		case resp.Error != nil:
			return errors.New("devtools: " + resp.Error.Message)
		case resp.Result.ExceptionDetails != nil:
			return errors.New("devtools: the expression threw: " + resp.Result.ExceptionDetails.Text)
		}
		return json.Unmarshal(resp.Result.Result.Value, out)
	}
}
