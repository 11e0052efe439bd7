package webhooks

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseEndpoint: any text an API caller sends as endpoint is either
// refused with ErrInvalid or is an absolute http(s) URL without
// credentials, query or fragment.
func FuzzParseEndpoint(f *testing.F) {
	f.Add("https://hooks.example.com/svc", false)
	f.Add("http://user:pw@10.0.0.1:8080/x?y#z", true)
	f.Fuzz(func(t *testing.T, raw string, allowHTTP bool) {
		u, err := ParseEndpoint(raw, allowHTTP)
		if err != nil {
			return
		}
		if (u.Scheme != "https" && (!allowHTTP || u.Scheme != "http")) || u.User != nil || u.RawQuery != "" ||
			u.Fragment != "" || u.Hostname() == "" || strings.ContainsAny(raw, "?#") {
			t.Fatalf("accepted %q as %#v", raw, u)
		}
	})
}

// FuzzRetryAfter: a receiver's Retry-After header never yields a negative
// wait or one past the cap.
func FuzzRetryAfter(f *testing.F) {
	f.Add("120")
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT")
	now := time.Date(2015, 10, 21, 7, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := retryAfter(v, now); d < 0 || d > BackoffCap {
			t.Fatalf("retryAfter(%q) = %s", v, d)
		}
	})
}
