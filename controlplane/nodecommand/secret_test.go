package nodecommand

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/shared/agentapi"
)

// A camera URL with credentials never stays in a stored command: the
// payload keeps the masked URL, the full one is sealed for the node and
// opened only for that node's agent while it holds the command.
func TestSecretURLIsSealedForItsNode(t *testing.T) {
	n, keys := storetest.WithKeys(t, Index)
	s := &Service{Store: n, Reader: n.State(), LocalNodeID: "cp1", Visibility: time.Minute, Keys: keys}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	const full = "rtsp://admin:Cam-Pa55@10.0.0.7:554/live?channel=1&password=Q-Pa55"
	payload, _ := json.Marshal(map[string]any{"id": "p1", "url": full, "app": "live", "stream": "s"})
	rec, _, err := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypeEngineProxyAdd, Payload: payload, Actor: operator})
	if err != nil {
		t.Fatal(err)
	}
	var stored agentapi.ProxyAdd
	if err := json.Unmarshal(rec.Payload, &stored); err != nil || !stored.SecretURL.SecretURL || stored.URL != "rtsp://***@10.0.0.7:554/live?channel=1&password=***" {
		t.Fatalf("stored payload %s (%v)", rec.Payload, err)
	}
	resp, _ := n.Range(ctx, "/", store.RangeOptions{End: "\x00"})
	for _, kv := range resp.KVs {
		if strings.Contains(string(kv.Value), "Pa55") {
			t.Fatalf("%s holds a password in clear", kv.Key)
		}
	}
	// Not before delivery, not for another node, not for another attempt.
	if _, err := s.Secret(ctx, "m1", rec.CommandID, 0); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("secret of a Pending command: %v", err)
	}
	got, err := s.Poll(ctx, "m1", time.Second, 1)
	if err != nil || len(got) != 1 || strings.Contains(string(got[0].Payload), "Pa55") {
		t.Fatalf("poll: %+v %v", got, err)
	}
	if _, err := s.Secret(ctx, "m2", rec.CommandID, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("secret for another node: %v", err)
	}
	if _, err := s.Secret(ctx, "m1", rec.CommandID, 2); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("secret for another attempt: %v", err)
	}
	if url, err := s.Secret(ctx, "m1", rec.CommandID, 1); err != nil || url != full {
		t.Fatalf("secret = %q, %v", url, err)
	}
	if _, err := s.Complete(ctx, "m1", agentapi.CommandResult{CommandID: rec.CommandID, Attempt: 1, Succeeded: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Secret(ctx, "m1", rec.CommandID, 1); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("secret of a finished command: %v", err)
	}
	// Callers cannot forge the mark.
	forged, _ := json.Marshal(map[string]any{"id": "p2", "url": "rtsp://cam/a", "secretUrl": true})
	if _, _, err := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypeEngineProxyAdd, Payload: forged, Actor: operator}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("forged secretUrl: %v", err)
	}
}

func TestRedactData(t *testing.T) {
	for in, want := range map[string]string{
		`{"url":"rtsp://a:b@cam/x?pwd=c","n":1}`:              `{"n":1,"url":"rtsp://***@cam/x?pwd=***"}`,
		`{"nested":[{"password":"p","Token":"t"}],"ok":true}`: `{"nested":[{"Token":"[REDACTED]","password":"[REDACTED]"}],"ok":true}`,
		`{"url":"rtsp://cam/user=u&password=p&channel=1"}`:    `{"url":"rtsp://cam/user=***&password=***&channel=1"}`,
		`not json`: ``,
	} {
		if got := string(RedactData(json.RawMessage(in))); got != want {
			t.Errorf("RedactData(%s) = %s, want %s", in, got, want)
		}
	}
}

// Records written by older versions, with the password in the payload,
// are rewritten once: masked, and sealed while in flight.
func TestScrubSecretsOfOlderRecords(t *testing.T) {
	n, keys := storetest.WithKeys(t, Index)
	s := &Service{Store: n, Reader: n.State(), LocalNodeID: "cp1", Keys: keys}
	ctx := t.Context()
	for i, status := range []string{Pending, Succeeded} {
		r := Record{CommandID: "old-" + status, NodeID: "m1", CommandType: agentapi.TypeEngineProxyAdd, Status: status, Attempt: i,
			Payload: json.RawMessage(`{"id":"p","url":"rtsp://admin:Old-Pa55@cam/a"}`)}
		val, _ := json.Marshal(r)
		if _, err := n.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(recordKey(r.CommandID), val)}}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.ScrubSecrets(ctx); err != nil || got != 2 {
		t.Fatalf("scrubbed %d, %v", got, err)
	}
	if got, err := s.ScrubSecrets(ctx); err != nil || got != 0 {
		t.Fatalf("second run scrubbed %d, %v", got, err)
	}
	resp, _ := n.Range(ctx, Prefix, store.RangeOptions{End: store.PrefixEnd(Prefix)})
	for _, kv := range resp.KVs {
		if strings.Contains(string(kv.Value), "Old-Pa55") {
			t.Fatalf("%s still holds the password", kv.Key)
		}
	}
	pending, _ := s.Get(ctx, "old-"+Pending)
	done, _ := s.Get(ctx, "old-"+Succeeded)
	if pending.SealedSecret == "" || done.SealedSecret != "" {
		t.Fatalf("sealed: in flight %q, finished %q", pending.SealedSecret, done.SealedSecret)
	}
}
