package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := New(60, 2)
	l.now = func() time.Time { return now }
	for i, want := range []bool{true, true, false} {
		if ok, _ := l.Allow("a"); ok != want {
			t.Fatalf("request %d: %v", i, ok)
		}
	}
	if ok, wait := l.Allow("a"); ok || wait <= 0 || wait > time.Second {
		t.Fatalf("empty bucket: %v %s", ok, wait)
	}
	now = now.Add(time.Second)
	if ok, _ := l.Allow("a"); !ok {
		t.Fatal("a token did not come back after a second")
	}
}

// One client spraying keys fills only its own share; another client's
// first request still passes.
func TestSprayerCannotExhaustTheTable(t *testing.T) {
	l := New(20, 20)
	for i := range maxPerOwner + 50 {
		l.AllowFor(fmt.Sprintf("user-%d", i), "203.0.113.9")
	}
	if ok, _ := l.AllowFor("user-new", "203.0.113.9"); ok {
		t.Fatal("the sprayer got a key beyond its share")
	}
	if ok, _ := l.AllowFor("alice", "198.51.100.7"); !ok {
		t.Fatal("another client was refused")
	}
	if len(l.buckets) > maxPerOwner+1 {
		t.Fatalf("%d buckets", len(l.buckets))
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.9":              "203.0.113.9",
		"2001:db8:1:2:aaaa::1":     "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ff::99": "2001:db8:1:2::/64",
		"not an ip":                "not an ip",
	} {
		if got := ClientKey(in); got != want {
			t.Errorf("ClientKey(%q) = %q, want %q", in, got, want)
		}
	}
}
