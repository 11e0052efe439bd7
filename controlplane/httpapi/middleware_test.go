package httpapi

import (
	"net/http"
	"testing"
)

func TestSocketIsLoopbackIgnoresForwardedHeaders(t *testing.T) {
	cases := map[string]bool{"127.0.0.1:5000": true, "[::1]:5000": true, "10.1.2.3:5000": false, "192.0.2.1:1": false, "garbage": false}
	for addr, want := range cases {
		r := &http.Request{RemoteAddr: addr, Header: http.Header{"X-Forwarded-For": {"127.0.0.1"}, "X-Real-Ip": {"127.0.0.1"}}}
		if got := socketIsLoopback(r); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
}
