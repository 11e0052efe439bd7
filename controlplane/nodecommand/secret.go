package nodecommand

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/credurl"
)

// ErrNoKeys means the service was built without a keyring and so cannot
// store a secret.
var ErrNoKeys = fault.New(fault.Internal, "internal", "node commands cannot carry secrets without the cluster keyring")

// sealURL moves the credentials of a payload's top-level "url" out of the
// payload, for the command types whose URL may carry them
// (agentapi.SecretURLTypes): the stored payload keeps the masked URL and
// "secretUrl": true, and the full URL comes back to be sealed. No command
// record ever holds a camera password in clear, whoever creates it.
func sealURL(typ string, payload json.RawMessage) (json.RawMessage, string, error) {
	if !agentapi.SecretURLTypes[typ] || len(payload) == 0 {
		return payload, "", nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(payload, &obj); err != nil {
		return nil, "", fmt.Errorf("%w: payload must be a JSON object", ErrInvalid)
	}
	if _, ok := obj["secretUrl"]; ok {
		return nil, "", fmt.Errorf("%w: secretUrl is set by the control plane, not by callers", ErrInvalid)
	}
	var url string
	if raw, ok := obj["url"]; !ok || json.Unmarshal(raw, &url) != nil || !credurl.Has(url) {
		return payload, "", nil
	}
	masked, _ := json.Marshal(credurl.Redact(url))
	obj["url"], obj["secretUrl"] = masked, json.RawMessage("true")
	out, err := json.Marshal(obj)
	return out, url, err
}

// secretAAD binds a sealed secret to its command and node: copied onto
// another command, or asked for by another node, it does not open.
func secretAAD(commandID, nodeID string) []byte { return []byte(recordKey(commandID) + "|" + nodeID) }

// Secret opens the sealed secret of a command for the agent of nodeID,
// only while that agent holds the given delivery of it (Dispatched or
// Running, same attempt). It is what the agent port's secret endpoint
// answers; nothing logs it.
func (s *Service) Secret(ctx context.Context, nodeID, commandID string, attempt int) (string, error) {
	r, err := s.Get(ctx, commandID)
	if err != nil {
		return "", err
	}
	if r.NodeID != nodeID {
		// The same answer as for an unknown command: another node learns
		// nothing about this one.
		return "", fmt.Errorf("%w: %q", ErrNotFound, commandID)
	}
	if (r.Status != Dispatched && r.Status != Running) || r.Attempt != attempt {
		return "", fmt.Errorf("%w: %s is %s (attempt %d), not in flight with this agent", ErrNotHeld, commandID, r.Status, r.Attempt)
	}
	if r.SealedSecret == "" {
		return "", fmt.Errorf("%w: command %s has no secret", ErrNotFound, commandID)
	}
	if s.Keys == nil {
		return "", ErrNoKeys
	}
	raw, err := s.Keys.Open(r.SealedSecret, secretAAD(r.CommandID, r.NodeID))
	if err != nil {
		return "", fmt.Errorf("opening the secret of node command %s: %w", commandID, err)
	}
	return string(raw), nil
}

// Redacted stands where an answer hides a secret.
const Redacted = "[REDACTED]"

// secretNames are property names whose values an answer never shows,
// compared without case.
var secretNames = map[string]bool{"password": true, "passwd": true, "pwd": true, "secret": true, "token": true, "accesstoken": true,
	"refreshtoken": true, "authorization": true, "cookie": true, "apikey": true, "privatekey": true, "credentials": true, "sealedsecret": true}

// RedactData is a command's payload or result as an API answer may show
// it: properties named like secrets replaced by "[REDACTED]" and every
// URL's credentials masked, at any depth. Payloads no longer hold secrets
// (see sealURL); this also covers results and records written before.
// Data that is not JSON is returned as nil.
func RedactData(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(redactValue(v)); err != nil {
		return nil
	}
	return bytes.TrimSpace(out.Bytes())
}

func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if secretNames[strings.ToLower(k)] {
				t[k] = Redacted
				continue
			}
			t[k] = redactValue(child)
		}
	case []any:
		for i, child := range t {
			t[i] = redactValue(child)
		}
	case string:
		if strings.Contains(t, "://") && credurl.Has(t) {
			return credurl.Redact(t)
		}
	}
	return v
}
