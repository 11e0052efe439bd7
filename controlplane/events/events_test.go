package events

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/events/eventstest"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// openNode starts a real single-node store.
func openNode(t *testing.T) *raftnode.Node {
	t.Helper()
	node, _ := eventstest.OpenNode(t, OutboxIndex, InboxIndex)
	return node
}

func TestReceiveEngineHookStoresInboxAndEventTogether(t *testing.T) {
	node := openNode(t)
	svc := &Service{Store: node, Reader: node.State(), NodeID: "n1"}
	ctx := context.Background()
	raw := `{"app":"live","stream":"cam1","schema":"rtsp","regist":true,"params":"secret=1"}`
	in, err := svc.ReceiveEngineHook(ctx, "on_stream_changed", "ms-1", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	inboxKV, _, _ := store.Get(ctx, node, InboxPrefix+in.ID, store.Local)
	eventKV, _, _ := store.Get(ctx, node, OutboxPrefix+in.ID, store.Local)
	if inboxKV == nil || eventKV == nil || inboxKV.ModRevision != eventKV.ModRevision {
		t.Fatalf("inbox %v and event %v must be written by one Txn", inboxKV, eventKV)
	}
	var ev struct {
		SchemaVersion int
		EventName     string
		Source        string
		NodeID        string `json:"nodeId"`
		Data          map[string]any
	}
	json.Unmarshal(eventKV.Value, &ev)
	d := ev.Data
	if ev.SchemaVersion != 1 || ev.EventName != "engine.webhook.OnStreamChanged" || ev.Source != "engine" || ev.NodeID != "n1" ||
		d["HookName"] != "OnStreamChanged" || d["MediaServerId"] != "ms-1" || d["App"] != "live" || d["Stream"] != "cam1" || d["RawJson"] != raw {
		t.Fatalf("event = %s", eventKV.Value)
	}
	if at, _ := d["ReceivedAt"].(string); !strings.HasSuffix(at, "+00:00") {
		t.Fatalf("ReceivedAt %q is not an offset timestamp", at)
	}
	list, total, err := svc.ListInbox(ctx, InboxQuery{HookName: "OnStreamChanged", Page: 1, PageSize: 10})
	if err != nil || total != 1 || list[0].RawJSON != raw || list[0].ReceivedHookName != "on_stream_changed" {
		t.Fatalf("inbox = %+v %d %v", list, total, err)
	}
	rev := node.Revision()
	bad := []struct {
		hook, server, body string
	}{
		{"on play", "ms-1", `{}`},
		{"", "ms-1", `{}`},
		{"on_play", "../etc", `{}`},
		{"on_play", "ms-1", `[1]`},
		{"on_play", "ms-1", `not json`},
		{"on_play", "ms-1", `null`},
		{"on_play", "ms-1", `{"a":"` + strings.Repeat("x", MaxHookBody) + `"}`},
	}
	for _, b := range bad {
		if _, err := svc.ReceiveEngineHook(ctx, b.hook, b.server, []byte(b.body)); !errors.Is(err, ErrInvalid) {
			t.Errorf("hook %q from %q with %.20q: %v", b.hook, b.server, b.body, err)
		}
	}
	if node.Revision() != rev {
		t.Fatal("refused hooks changed the store")
	}
}

func TestNormalizeHookNames(t *testing.T) {
	cases := map[string]string{
		"on_stream_changed": "OnStreamChanged", "on_play": "OnPlay", "OnPlay": "OnPlay", "on_record_mp4": "OnRecordMp4",
		"on__flow_report": "OnFlowReport", "onPlay": "OnPlay",
	}
	for in, want := range cases {
		if got, err := NormalizeHookName(in); err != nil || got != want {
			t.Errorf("NormalizeHookName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "_x", "on-play", "on play", strings.Repeat("a", 65), "1abc"} {
		if _, err := NormalizeHookName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("NormalizeHookName(%q) accepted", bad)
		}
	}
	if got, _ := NormalizeEventName("engine.webhook.on_server_keepalive"); got != "engine.webhook.OnServerKeepalive" {
		t.Errorf("event name normalised to %q", got)
	}
	for _, keep := range []string{"engine.webhook.*", "media.server.started", "rtc.*"} {
		if got, _ := NormalizeEventName(keep); got != keep {
			t.Errorf("NormalizeEventName(%q) = %q", keep, got)
		}
	}
}

func TestSelectors(t *testing.T) {
	for _, ok := range []string{"media.*", "media.server.*", "engine.webhook.*", "engine.*", "engine.webhook.OnPlay", "engine.webhook.OnCustomHook",
		"system.webhook.test", "device.gb28181.auth_failed", "rtc.participant.*"} {
		if err := ValidateSelector(ok); err != nil {
			t.Errorf("ValidateSelector(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"*", ".*", "media", "media.server.exploded", "nothing.*", "media.*.online", "engine.webhook.on_play", "med*"} {
		if err := ValidateSelector(bad); err == nil {
			t.Errorf("ValidateSelector(%q) accepted", bad)
		}
	}
	sel := []string{"media.server.*", "engine.webhook.OnPlay"}
	for name, want := range map[string]bool{"media.server.started": true, "media.stream.online": false, "engine.webhook.OnPlay": true, "engine.webhook.OnPlayX": false} {
		if Matches(sel, name) != want {
			t.Errorf("Matches(%v, %q) != %v", sel, name, want)
		}
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"Password":"x","b":{"accessToken":"y","list":[{"COOKIE":"z"}]}}`, `{"Password":"[REDACTED]","b":{"accessToken":"[REDACTED]","list":[{"COOKIE":"[REDACTED]"}]}}`},
		{`{"RawJson":"{\"password\":\"x\"}","secret":{"nested":1}}`, `{"RawJson":"{\"password\":\"x\"}","secret":"[REDACTED]"}`},
		{`{"tokenCount":3,"params":null}`, `{"params":"[REDACTED]","tokenCount":3}`},
		{`{"big":12345678901234567890,"passwd":"p"}`, `{"big":12345678901234567890,"passwd":"[REDACTED]"}`},
		{`not json with password`, `not json with password`},
	}
	for _, c := range cases {
		if got := string(Redact(json.RawMessage(c.in))); got != c.want {
			t.Errorf("Redact(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
