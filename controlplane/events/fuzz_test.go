package events

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseCursor: a client's cursor query parameter either fails with
// ErrInvalid or round-trips exactly.
func FuzzParseCursor(f *testing.F) {
	f.Add("12.3.45")
	f.Add("0.0.0")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCursor(s)
		if err != nil {
			return
		}
		if c.rev < 0 || c.index < 0 || c.seq < 0 {
			t.Fatalf("parseCursor(%q) = %+v", s, c)
		}
		if again, err := parseCursor(c.String()); err != nil || again != c {
			t.Fatalf("cursor %q does not round-trip: %+v %v", s, again, err)
		}
	})
}

// FuzzRedact: event data (engine hooks come from the network) never makes
// Redact fail; JSON stays valid JSON, and no listed property keeps a value
// other than the redaction text.
func FuzzRedact(f *testing.F) {
	f.Add([]byte(`{"password":"x","a":[{"Token":1}],"RawJson":"{\"secret\":1}"}`))
	f.Add([]byte(`[1,"params",{"cookie":{}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := Redact(data)
		if !json.Valid(data) {
			if !bytes.Equal(out, data) {
				t.Fatalf("non-JSON input changed")
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Redact(%s) = %s is not JSON", data, out)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if dec.Decode(&v) == nil && leaks(v) {
			t.Fatalf("Redact(%s) = %s still has a listed property", data, out)
		}
	})
}

// FuzzNormalizeHookName: any hook name the engine sends is refused or
// becomes a catalog-form name that normalises to itself.
func FuzzNormalizeHookName(f *testing.F) {
	f.Add("on_stream_changed")
	f.Add("OnPlay")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := NormalizeHookName(s)
		if err != nil {
			return
		}
		if again, err := NormalizeHookName(n); err != nil || again != n || !known(EngineWebhookPrefix+n) {
			t.Fatalf("NormalizeHookName(%q) = %q, then %q %v", s, n, again, err)
		}
	})
}

// leaks reports whether a listed property holds anything but the
// redaction text.
func leaks(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if redactedNames[strings.ToLower(k)] && child != Redacted {
				return true
			}
			if leaks(child) {
				return true
			}
		}
	case []any:
		for _, child := range t {
			if leaks(child) {
				return true
			}
		}
	}
	return false
}
