package mediaengine

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

func TestControlProxies(t *testing.T) {
	te := startEngine(t, func(c *engineapi.Config) { c.DemoFile, c.DemoPath = "", "" })
	add := engineapi.AddProxyRequest{ID: "cam1", URL: "file://builtin", App: "proxy", Stream: "cam1",
		Retry: engineapi.RetryPolicy{InitialBackoff: engineapi.Duration(50 * time.Millisecond)}}
	var info engineapi.ProxyInfo
	if st := te.control(t, "POST", engineapi.PathProxies, add, &info); st != 200 || info.ID != "cam1" || info.Retry.MaxBackoff.D() != 30*time.Second {
		t.Fatalf("add: %d %+v", st, info)
	}
	var list engineapi.ProxyList
	testkit.Eventually(t, 5*time.Second, "the proxy to go live", func() bool {
		te.control(t, "GET", engineapi.PathProxies, nil, &list)
		return len(list.Proxies) == 1 && list.Proxies[0].State == "live" && list.Proxies[0].LiveSince != nil
	})
	var streams engineapi.StreamList
	testkit.Eventually(t, 5*time.Second, "the pulled stream", func() bool {
		te.control(t, "GET", engineapi.PathStreams+"?app=proxy", nil, &streams)
		return len(streams.Streams) == 1 && streams.Streams[0].Origin == "pull"
	})
	if p := openFLV(t, te.mediaURL("/proxy/cam1.live.flv")); p.status != 200 {
		t.Fatalf("playing the pulled stream: %d", p.status)
	}
	if st := te.control(t, "POST", engineapi.PathProxies, add, &info); st != 200 || info.State != "live" {
		t.Fatalf("adding the same proxy again is idempotent: %d %+v", st, info)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*engineapi.AddProxyRequest)
		status int
		code   string
	}{
		{"same id, other url", func(r *engineapi.AddProxyRequest) { r.URL = "file:///other.ts" }, http.StatusConflict, engineapi.CodeProxyExists},
		{"same path, other id", func(r *engineapi.AddProxyRequest) { r.ID = "cam2" }, http.StatusConflict, engineapi.CodeProxyExists},
		{"no id", func(r *engineapi.AddProxyRequest) { r.ID = "" }, http.StatusBadRequest, engineapi.CodeInvalidBody},
		{"relative url", func(r *engineapi.AddProxyRequest) { r.ID, r.URL = "x", "cam.ts" }, http.StatusBadRequest, engineapi.CodeInvalidBody},
		{"bad transport", func(r *engineapi.AddProxyRequest) { r.ID, r.Transport = "x", "sctp" }, http.StatusBadRequest, engineapi.CodeInvalidBody},
		{"backoff inverted", func(r *engineapi.AddProxyRequest) {
			r.ID, r.Stream, r.Retry.MaxBackoff = "x", "x", engineapi.Duration(time.Millisecond)
		}, http.StatusBadRequest, engineapi.CodeInvalidBody},
		{"unknown scheme", func(r *engineapi.AddProxyRequest) { r.ID, r.Stream, r.URL = "x", "x", "gopher://cam" }, http.StatusBadRequest, engineapi.CodeUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := add
			tc.mutate(&req)
			var e engineapi.Error
			if st := te.control(t, "POST", engineapi.PathProxies, req, &e); st != tc.status || e.Code != tc.code {
				t.Fatalf("%d %+v, want %d %s", st, e, tc.status, tc.code)
			}
		})
	}
	// A source that cannot be opened is retried, then given up on.
	bad := engineapi.AddProxyRequest{ID: "broken", URL: "file:///nonexistent/clip.ts", App: "proxy", Stream: "broken",
		Retry: engineapi.RetryPolicy{MaxAttempts: 3, InitialBackoff: engineapi.Duration(20 * time.Millisecond)}}
	te.control(t, "POST", engineapi.PathProxies, bad, &info)
	testkit.Eventually(t, 5*time.Second, "the broken proxy to fail", func() bool {
		te.control(t, "GET", engineapi.PathProxies, nil, &list)
		return len(list.Proxies) == 2 && list.Proxies[0].State == "failed"
	})
	if p := list.Proxies[0]; p.Attempts != 3 || !strings.Contains(p.LastError, "nonexistent") {
		t.Fatalf("failed proxy %+v", p)
	}
	// A source that ends is pulled again.
	short := engineapi.AddProxyRequest{ID: "short", URL: "file://builtin?loops=1", App: "proxy", Stream: "short",
		Retry: engineapi.RetryPolicy{InitialBackoff: engineapi.Duration(20 * time.Millisecond)}}
	te.control(t, "POST", engineapi.PathProxies, short, &info)
	if st := te.control(t, "DELETE", "/api/v1/proxies/cam1", nil, nil); st != http.StatusNoContent {
		t.Fatalf("remove: %d", st)
	}
	testkit.Eventually(t, 3*time.Second, "the removed proxy's stream to end", func() bool {
		te.control(t, "GET", engineapi.PathStreams+"?stream=cam1", nil, &streams)
		return len(streams.Streams) == 0
	})
	var e engineapi.Error
	if st := te.control(t, "DELETE", "/api/v1/proxies/cam1", nil, &e); st != http.StatusNotFound || e.Code != engineapi.CodeProxyNotFound {
		t.Fatalf("remove twice: %d %+v", st, e)
	}
	te.control(t, "GET", engineapi.PathProxies, nil, &list)
	if len(list.Proxies) != 2 || list.Proxies[1].ID != "short" {
		t.Fatalf("proxies after removal %+v", list.Proxies)
	}
}
