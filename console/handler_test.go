package console

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

func testHandler(t *testing.T, origins ...string) *Handler {
	t.Helper()
	js := strings.Repeat("console.log('svc');\n", 100)
	h, err := newHandler(fstest.MapFS{
		"index.html":             {Data: []byte(`<!doctype html><script type="module" src="/assets/index-abc123.js"></script>`)},
		"assets/index-abc123.js": {Data: []byte(js)},
		"favicon.svg":            {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
	}, Options{MediaOrigins: func(context.Context) []string { return origins }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(h http.Handler, method, path string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerServesTheBuildWithItsHeaders(t *testing.T) {
	h := testHandler(t, "http://127.0.0.1:8088", "http://media-2:8088/", "http://evil; script-src *", "http://127.0.0.1:8088")
	for _, c := range []struct {
		name, method, path string
		status             int
		contentType, cache string
		index              bool
	}{
		{"the root", "GET", "/", 200, "text/html", "no-cache", true},
		{"a client route", "GET", "/channels/01a2", 200, "text/html", "no-cache", true},
		{"index.html itself", "GET", "/index.html", 200, "text/html", "no-cache", true},
		{"a hashed asset", "GET", "/assets/index-abc123.js", 200, "text/javascript", "public, max-age=31536000, immutable", false},
		{"a public file", "GET", "/favicon.svg", 200, "image/svg+xml", "no-cache", false},
		{"a missing asset", "GET", "/assets/gone-000.js", 404, "text/plain", "no-store", false},
		{"a missing file", "GET", "/robots.txt", 404, "text/plain", "no-store", false},
		{"HEAD", "HEAD", "/live", 200, "text/html", "no-cache", true},
		{"a POST", "POST", "/", 405, "text/plain", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := get(h, c.method, c.path)
			if w.Code != c.status || !strings.HasPrefix(w.Header().Get("Content-Type"), c.contentType) || w.Header().Get("Cache-Control") != c.cache {
				t.Fatalf("%d %q %q", w.Code, w.Header().Get("Content-Type"), w.Header().Get("Cache-Control"))
			}
			for k, v := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if w.Header().Get(k) != v {
					t.Fatalf("%s = %q", k, w.Header().Get(k))
				}
			}
			csp := w.Header().Get("Content-Security-Policy")
			if c.index != strings.Contains(csp, "script-src 'self'") {
				t.Fatalf("policy %q", csp)
			}
			if c.method == "HEAD" && w.Body.Len() != 0 {
				t.Fatal("HEAD has a body")
			}
		})
	}
	csp := get(h, "GET", "/").Header().Get("Content-Security-Policy")
	want := "connect-src 'self' http://127.0.0.1:8088 http://media-2:8088; media-src 'self' blob: http://127.0.0.1:8088 http://media-2:8088;"
	if !strings.Contains(csp, want) || strings.Contains(csp, "evil") || strings.Contains(csp, "unsafe") {
		t.Fatalf("policy %q", csp)
	}
}

func TestHandlerCompressesAndRevalidates(t *testing.T) {
	h := testHandler(t)
	plain := get(h, "GET", "/assets/index-abc123.js")
	gz := get(h, "GET", "/assets/index-abc123.js", "Accept-Encoding", "br, gzip;q=0.8")
	if gz.Header().Get("Content-Encoding") != "gzip" || gz.Body.Len() >= plain.Body.Len() || plain.Header().Get("Content-Encoding") != "" {
		t.Fatalf("gzip %q %d bytes, plain %d bytes", gz.Header().Get("Content-Encoding"), gz.Body.Len(), plain.Body.Len())
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	if !bytes.Equal(body, plain.Body.Bytes()) {
		t.Fatal("the gzip body differs")
	}
	if gz.Header().Get("ETag") == plain.Header().Get("ETag") || !strings.Contains(gz.Header().Get("Vary"), "Accept-Encoding") {
		t.Fatalf("etags %q %q", gz.Header().Get("ETag"), plain.Header().Get("ETag"))
	}
	if w := get(h, "GET", "/assets/index-abc123.js", "Accept-Encoding", "gzip;q=0"); w.Header().Get("Content-Encoding") != "" {
		t.Fatal("gzip;q=0 got gzip")
	}
	if w := get(h, "GET", "/assets/index-abc123.js", "If-None-Match", plain.Header().Get("ETag")); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Fatalf("revalidation: %d", w.Code)
	}
	if w := get(h, "GET", "/favicon.svg", "Accept-Encoding", "gzip"); w.Header().Get("Content-Encoding") != "" {
		t.Fatal("a tiny file was compressed")
	}
}

func TestTheEmbeddedBuildLoads(t *testing.T) {
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := get(h, "GET", "/")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `<div id="app">`) || strings.Contains(w.Body.String(), "<script>") {
		t.Fatalf("index.html: %d %s", w.Code, w.Body.String())
	}
}

// TestPermissionsTableIsCurrent fails when src/api/permissions.ts was not
// regenerated after api/openapi.yaml changed: run make generate.
func TestPermissionsTableIsCurrent(t *testing.T) {
	want, err := PermissionsTS()
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(PermissionsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, have) {
		t.Fatal(PermissionsFile + " is stale: run `make generate` and commit the result")
	}
	if !bytes.Contains(have, []byte(`"GET /api/v2/channels": { permission: "channels.view" }`)) {
		t.Fatal("the table lacks listChannels")
	}
}
