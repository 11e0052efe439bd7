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
	node, _ := eventstest.OpenNode(t, OutboxIndex)
	return node
}

func TestReceiveEngineHookStoresOneEventTheInboxLists(t *testing.T) {
	node := openNode(t)
	svc := &Service{Store: node, Reader: node.State(), NodeID: "n1"}
	ctx := context.Background()
	raw := `{"app":"live","stream":"cam1","schema":"rtsp","regist":true,"params":"secret=1"}`
	in, err := svc.ReceiveEngineHook(ctx, "on_stream_changed", "ms-1", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	eventKV, _, _ := store.Get(ctx, node, OutboxPrefix+in.ID, store.Local)
	if eventKV == nil {
		t.Fatal("the hook's event was not written")
	}
	if copies, _ := node.Range(ctx, LegacyInboxPrefix, store.RangeOptions{End: store.PrefixEnd(LegacyInboxPrefix), CountOnly: true}); copies.Count != 0 {
		t.Fatalf("%d inbox copies written besides the event", copies.Count)
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
	if err != nil || total != 1 || list[0].ID != in.ID || list[0].RawJSON != raw || list[0].ReceivedHookName != "on_stream_changed" ||
		list[0].HookName != "OnStreamChanged" || list[0].MediaServerID != "ms-1" || *list[0].App != "live" || *list[0].Stream != "cam1" ||
		!list[0].ReceivedAt.Equal(in.ReceivedAt) {
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

func TestInboxListsOnlyEngineHooksWithTheirFilters(t *testing.T) {
	node := openNode(t)
	svc := &Service{Store: node, Reader: node.State(), NodeID: "n1"}
	ctx := context.Background()
	// An event that is not a hook, though its data names a media server.
	other, err := New("media.server.started", SourceEngine, "n1", map[string]any{"MediaServerId": "ms-1"})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := Op(other)
	if _, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range []struct{ hook, server string }{{"on_play", "ms-1"}, {"on_play", "ms-2"}, {"OnPublish", "ms-1"}, {"on_play", "ms-1"}} {
		in, err := svc.ReceiveEngineHook(ctx, h.hook, h.server, []byte(`{"app":"live"}`))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	cases := []struct {
		q    InboxQuery
		want []string
	}{
		{InboxQuery{}, []string{ids[3], ids[2], ids[1], ids[0]}},
		{InboxQuery{HookName: "on_play"}, []string{ids[3], ids[1], ids[0]}},
		{InboxQuery{MediaServerID: "ms-1"}, []string{ids[3], ids[2], ids[0]}},
		{InboxQuery{HookName: "OnPlay", MediaServerID: "ms-1"}, []string{ids[3], ids[0]}},
		{InboxQuery{MediaServerID: "ms-3"}, nil},
	}
	for _, c := range cases {
		c.q.Page, c.q.PageSize = 1, 10
		list, total, err := svc.ListInbox(ctx, c.q)
		if err != nil || total != int64(len(c.want)) || len(list) != len(c.want) {
			t.Fatalf("%+v: %d rows of %d, %v; want %d", c.q, len(list), total, err, len(c.want))
		}
		for i, in := range list {
			if in.ID != c.want[i] {
				t.Fatalf("%+v: row %d is %s, want %s", c.q, i, in.ID, c.want[i])
			}
		}
	}
	page2, total, err := svc.ListInbox(ctx, InboxQuery{Page: 2, PageSize: 3})
	if err != nil || total != 4 || len(page2) != 1 || page2[0].ID != ids[0] {
		t.Fatalf("page 2 = %+v of %d, %v", page2, total, err)
	}
}

func TestDropLegacyInboxRemovesOnlyTheOldCopies(t *testing.T) {
	node := openNode(t)
	svc := &Service{Store: node, Reader: node.State(), NodeID: "n1"}
	ctx := context.Background()
	var ops []store.Op
	for i := range 7 {
		ops = append(ops, store.Put(LegacyInboxPrefix+strings.Repeat("0", i+1), []byte(`{}`)))
	}
	ops = append(ops, store.Put("/events/webhook-inboxes", []byte(`{}`)))
	if _, err := node.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		t.Fatal(err)
	}
	in, err := svc.ReceiveEngineHook(ctx, "on_play", "ms-1", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var removed []int64
	for {
		n, err := svc.DropLegacyInbox(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		removed = append(removed, n)
	}
	if len(removed) != 3 || removed[0] != 3 || removed[1] != 3 || removed[2] != 1 {
		t.Fatalf("removed in batches %v, want [3 3 1]", removed)
	}
	left, _ := node.Range(ctx, LegacyInboxPrefix, store.RangeOptions{End: store.PrefixEnd(LegacyInboxPrefix), CountOnly: true})
	neighbour, _, _ := store.Get(ctx, node, "/events/webhook-inboxes", store.Local)
	if list, total, _ := svc.ListInbox(ctx, InboxQuery{Page: 1, PageSize: 10}); left.Count != 0 || neighbour == nil || total != 1 || list[0].ID != in.ID {
		t.Fatalf("left %d legacy copies, neighbour %v, inbox %d", left.Count, neighbour, total)
	}
}
