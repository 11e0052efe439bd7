package httpapi

import (
	"net/http/httptest"
	"testing"
)

func TestConsoleRequestLeavesTheAPIAlone(t *testing.T) {
	for _, c := range []struct {
		method, path string
		console      bool
	}{
		{"GET", "/", true},
		{"GET", "/channels/abc", true},
		{"HEAD", "/assets/index-1.js", true},
		{"GET", "/api/v2/no-such-thing", false},
		{"GET", "/api", false},
		{"GET", "/internal/raft/join", false},
		{"GET", "/health", false},
		{"GET", "/metrics", false},
		{"POST", "/", false},
		{"DELETE", "/channels", false},
	} {
		if got := consoleRequest(httptest.NewRequest(c.method, c.path, nil)); got != c.console {
			t.Errorf("%s %s: console %v, want %v", c.method, c.path, got, c.console)
		}
	}
}
