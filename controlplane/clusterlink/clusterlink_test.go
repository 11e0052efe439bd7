package clusterlink

import (
	"errors"
	"testing"
	"time"
)

func TestSignedRequestsVerifyOnceAndOnlyAsSigned(t *testing.T) {
	key, old, other := []byte("current-link-key"), []byte("previous-link-key"), []byte("another-cluster")
	now := time.Now()
	body := []byte(`{"nodeId":"cp2"}`)
	v := NewVerifier([][]byte{key, old})
	h := Sign(key, "POST", "10.0.0.1:8080", "/internal/v1/cluster/join", body, now)
	if err := v.Check(h, "POST", "10.0.0.1:8080", "/internal/v1/cluster/join", body, now.Add(time.Second)); err != nil {
		t.Fatalf("a fresh signed request: %v", err)
	}
	if err := v.Check(h, "POST", "10.0.0.1:8080", "/internal/v1/cluster/join", body, now.Add(2*time.Second)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("the same request again: %v", err)
	}
	// A key still accepted after a rotation verifies; the host's case does
	// not matter.
	if err := v.Check(Sign(old, "POST", "10.0.0.1:8080", "/p", body, now), "POST", "10.0.0.1:8080", "/p", body, now); err != nil {
		t.Fatalf("the previous key: %v", err)
	}
	if err := v.Check(Sign(key, "POST", "Node-A:8080", "/p", body, now), "POST", "node-a:8080", "/p", body, now); err != nil {
		t.Fatalf("host case: %v", err)
	}
	for name, c := range map[string]struct {
		key                []byte
		method, host, path string
		body               []byte
		at                 time.Time
		want               error
	}{
		"another cluster's key": {other, "POST", "10.0.0.1:8080", "/p", body, now, ErrSignature},
		"another member":        {key, "POST", "10.0.0.2:8080", "/p", body, now, ErrSignature},
		"another path":          {key, "POST", "10.0.0.1:8080", "/q", body, now, ErrSignature},
		"another method":        {key, "PUT", "10.0.0.1:8080", "/p", body, now, ErrSignature},
		"another body":          {key, "POST", "10.0.0.1:8080", "/p", []byte(`{"nodeId":"cp3"}`), now, ErrSignature},
		"too old":               {key, "POST", "10.0.0.1:8080", "/p", body, now.Add(-Window - time.Second), ErrStale},
		"from the future":       {key, "POST", "10.0.0.1:8080", "/p", body, now.Add(Window + time.Second), ErrStale},
	} {
		// Signed for POST 10.0.0.1:8080 /p with body at c.at, checked as c
		// says at now.
		h := Sign(c.key, "POST", "10.0.0.1:8080", "/p", body, c.at)
		if err := v.Check(h, c.method, c.host, c.path, c.body, now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if err := v.Check(map[string][]string{}, "POST", "h", "/p", nil, now); !errors.Is(err, ErrStale) {
		t.Errorf("no headers: %v", err)
	}
}
