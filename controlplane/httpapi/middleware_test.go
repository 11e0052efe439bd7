package httpapi

import (
	"errors"
	"net/http"
	"testing"

	"github.com/svcplatform/svc/controlplane/apitoken"
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
