package streams

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

func newService(t *testing.T) *Service {
	t.Helper()
	node, keys := storetest.WithKeys(t, append(append(channels.Indexes[:0:0], channels.Indexes...), SessionIndex)...)
	return &Service{Store: node, Reader: node.State(), NodeID: "n1",
		Channels: &channels.Service{Store: node, Reader: node.State(), Keys: keys}}
}

func outbox(t *testing.T, s *Service) []events.Envelope {
	t.Helper()
	resp, err := s.Store.Range(context.Background(), events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix)})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Envelope
	for _, kv := range resp.KVs {
		var e events.Envelope
		if err := json.Unmarshal(kv.Value, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestSessionsFollowTheEngineAndDriveTheChannel(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	p := func(v string) *string { return &v }
	proto := channels.ProtocolRTSP
	ch, err := s.Channels.Create(ctx, channels.Actor{Type: "test"}, channels.Input{Name: p("cam"), Protocol: &proto,
		SourceURL: p("rtsp://192.0.2.10/stream1"), App: p("live"), Stream: p("cam1"), MediaServerID: p("ms1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Channels.Start(ctx, channels.Actor{Type: "test"}, ch.ChannelID); err != nil {
		t.Fatal(err)
	}
	loc, err := s.Locate(ctx, string(ch.ChannelID))
	if err != nil || loc.Online || loc.MediaServerID != "ms1" {
		t.Fatalf("before media: %+v %v", loc, err)
	}
	up := Change{MediaServerID: "ms1", App: "live", Stream: "cam1", Online: true, Origin: "rtsp-pull", Schemas: []string{"http-flv", "hls"},
		Tracks: []Track{{Kind: "video", Codec: "H264", Width: 640, Height: 360, FPS: 25}}}
	for i := 0; i < 3; i++ { // repeated reports write one transition
		if _, err := s.Apply(ctx, up); err != nil {
			t.Fatal(err)
		}
	}
	if loc, _ := s.Locate(ctx, string(ch.ChannelID)); !loc.Online {
		t.Fatal("the stream is not Online after media arrived")
	}
	got, _ := s.Channels.Get(ctx, ch.ChannelID)
	if got.ActualState != channels.ActualOnline {
		t.Fatalf("channel state %s", got.ActualState)
	}
	evs := outbox(t, s)
	if len(evs) != 1 || evs[0].EventName != events.MediaStreamOnline || evs[0].Source != events.SourceMedia {
		t.Fatalf("events %+v", evs)
	}
	var data map[string]any
	json.Unmarshal(evs[0].Data, &data)
	for _, k := range []string{"MediaServerId", "Vhost", "App", "streamId", "schema", "online", "occurredAtUtc"} {
		if _, ok := data[k]; !ok {
			t.Fatalf("event data lacks %s: %s", k, evs[0].Data)
		}
	}
	// The source is lost while the channel should run: Offline event, the
	// channel retries with backoff.
	if _, err := s.Apply(ctx, Change{MediaServerID: "ms1", App: "live", Stream: "cam1"}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Channels.Get(ctx, ch.ChannelID)
	if got.ActualState != channels.ActualRetrying || got.Retry.NextRetryAt == nil {
		t.Fatalf("after the loss: %s %+v", got.ActualState, got.Retry)
	}
	if evs := outbox(t, s); len(evs) != 2 || evs[1].EventName != events.MediaStreamOffline {
		t.Fatalf("events after the loss %+v", evs)
	}
	// A stream nobody configured is still a session, without a channel.
	if sess, err := s.Apply(ctx, Change{MediaServerID: "ms1", App: "push", Stream: "x", Online: true}); err != nil || sess.ChannelID != "" {
		t.Fatalf("%+v %v", sess, err)
	}
	rows, total, err := s.Sessions(ctx, SessionQuery{State: StateOnline, Page: 1, PageSize: 10})
	if err != nil || total != 1 || rows[0].App != "push" {
		t.Fatalf("online sessions %+v %d %v", rows, total, err)
	}
}
