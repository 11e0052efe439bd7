package httpapi

import (
	"errors"
	"net/http"
	"testing"

	"github.com/svcplatform/svc/controlplane/apitoken"
)

func TestLocalMeansLoopbackWithoutProxy(t *testing.T) {
	trusted, _ := NewProxyTrust([]string{"127.0.0.2"})
	cases := []struct {
		addr   string
		header http.Header
		want   bool
	}{
		{"127.0.0.1:5000", nil, true},
		{"[::1]:5000", nil, true},
		{"10.1.2.3:5000", nil, false},
		{"garbage", nil, false},
		// Forwarded headers never make a remote peer local...
		{"192.0.2.1:1", http.Header{"X-Forwarded-For": {"127.0.0.1"}, "X-Real-Ip": {"127.0.0.1"}}, false},
		// ...and make a loopback peer (a proxy on this host) remote.
		{"127.0.0.1:5000", http.Header{"X-Forwarded-For": {"203.0.113.9"}}, false},
		{"127.0.0.1:5000", http.Header{"X-Real-Ip": {"203.0.113.9"}}, false},
		{"127.0.0.1:5000", http.Header{"Forwarded": {"for=203.0.113.9"}}, false},
		{"127.0.0.1:5000", http.Header{"Via": {"1.1 nginx"}}, false},
		// A trusted proxy's own connections are never local.
		{"127.0.0.2:5000", nil, false},
	}
	for _, tc := range cases {
		r := &http.Request{RemoteAddr: tc.addr, Header: tc.header}
		if r.Header == nil {
			r.Header = http.Header{}
		}
		if got := local(r, trusted); got != tc.want {
			t.Errorf("%s %v: %v, want %v", tc.addr, tc.header, got, tc.want)
		}
	}
}

func TestAuthCacheServesOnlyTheRevisionItWasFilledAt(t *testing.T) {
	c := &AuthCache{}
	rec := &apitoken.Record{TokenID: "t"}
	c.Put("tok", 7, cachedToken{rec: rec})
	if e, ok := c.Get("tok", 7); !ok || e.rec != rec {
		t.Fatal("miss at the same revision")
	}
	if _, ok := c.Get("tok", 8); ok {
		t.Fatal("entry served after the revision moved (a revocation would be missed)")
	}
	if _, ok := c.Get("tok", -1); ok {
		t.Fatal("cache used without a revision source")
	}
	c.Put("other", 8, cachedToken{rec: rec})
	if _, ok := c.Get("tok", 8); ok {
		t.Fatal("old-revision entry survived a newer fill")
	}
	var nilCache *AuthCache
	nilCache.Put("x", 1, cachedToken{})
	if _, ok := nilCache.Get("x", 1); ok {
		t.Fatal("nil cache returned an entry")
	}
}

func TestCredentialsRefusedWhenOutOfContact(t *testing.T) {
	contact := true
	a := APITokenAuth{InContact: func() bool { return contact }}
	r := &http.Request{Header: http.Header{"Authorization": {"Bearer svc_pat_x"}}}
	contact = false
	_, err := a.Authenticate(r, nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != 503 || e.Retryable == nil || !*e.Retryable {
		t.Fatalf("out of contact: %v", err)
	}
	// Anonymous requests (public operations) are unaffected.
	if id, err := a.Authenticate(&http.Request{Header: http.Header{}}, nil); id != nil || err != nil {
		t.Fatalf("anonymous: %v %v", id, err)
	}
}
