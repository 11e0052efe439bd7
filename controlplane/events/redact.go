package events

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Redacted replaces the value of every redacted property.
const Redacted = "[REDACTED]"

// redactedNames are the property names contract A ("Delivery contract",
// rule 6) hides before an event leaves the cluster, compared without case.
var redactedNames = map[string]bool{
	"secret": true, "password": true, "passwd": true, "token": true, "accesstoken": true,
	"refreshtoken": true, "authorization": true, "cookie": true, "licensecode": true,
	"requestcode": true, "apikey": true, "params": true,
}

// needles are cheap substrings that must occur in data before it is worth
// parsing: every redacted name contains one of them.
var needles = [][]byte{[]byte("secret"), []byte("passw"), []byte("token"), []byte("authorization"),
	[]byte("cookie"), []byte("code"), []byte("apikey"), []byte("params")}

// Redact returns data with the value of every property named in the
// contract's redaction list replaced by "[REDACTED]", at any depth. Text
// inside a string (a RawJson property holding upstream JSON) is not parsed
// and so not redacted, as the contract says. Data that is not JSON is
// returned unchanged.
func Redact(data json.RawMessage) json.RawMessage {
	lower := bytes.ToLower(data)
	found := false
	for _, n := range needles {
		if bytes.Contains(lower, n) {
			found = true
			break
		}
	}
	if !found || !json.Valid(data) {
		return data
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return data
	}
	if !redactValue(v) {
		return data
	}
	out, err := json.Marshal(v)
	if err != nil {
		return data
	}
	return out
}

// redactValue redacts in place and reports whether anything changed.
func redactValue(v any) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if redactedNames[strings.ToLower(k)] {
				t[k] = Redacted
				changed = true
				continue
			}
			if redactValue(child) {
				changed = true
			}
		}
	case []any:
		for _, child := range t {
			if redactValue(child) {
				changed = true
			}
		}
	}
	return changed
}
