package streams

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/svcplatform/svc/controlplane/channels"
)

// TestOnlineIsNeverReplacedByStarting forces the race between the
// dispatcher's Starting report and the engine's Online report, in both
// orders and concurrently, many times: whichever lands last, a channel
// whose stream arrived ends Online. A late failure report of a superseded
// start leaves it Online too.
func TestOnlineIsNeverReplacedByStarting(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	a := channels.Actor{Type: "test"}
	p := func(v string) *string { return &v }
	proto := channels.ProtocolRTSP
	for i := 0; i < 40; i++ {
		stream := fmt.Sprintf("race%d", i)
		ch, err := s.Channels.Create(ctx, a, channels.Input{Name: p(stream), Protocol: &proto, SourceURL: p("rtsp://192.0.2.10/" + stream),
			App: p("live"), Stream: p(stream), MediaServerID: p("ms1")})
		if err != nil {
			t.Fatal(err)
		}
		_, cmd, err := s.Channels.Start(ctx, a, ch.ChannelID)
		if err != nil {
			t.Fatal(err)
		}
		up := Change{MediaServerID: "ms1", App: "live", Stream: stream, Online: true}
		starting := func() {
			if _, err := s.Channels.SetCommandState(ctx, a, ch.ChannelID, cmd.CommandID, channels.ActualStarting, "pulling; waiting for media"); err != nil {
				t.Error(err)
			}
		}
		online := func() {
			if _, err := s.Apply(ctx, up); err != nil {
				t.Error(err)
			}
		}
		switch i % 3 {
		case 0: // media first, the dispatcher's report late
			online()
			starting()
		case 1:
			starting()
			online()
		default:
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); starting() }()
			go func() { defer wg.Done(); online() }()
			wg.Wait()
		}
		if recorded, err := s.Channels.RecordFailedStart(ctx, a, ch.ChannelID, cmd.CommandID, "a repeated node command timed out"); err != nil || recorded {
			t.Fatalf("a start failure was counted against an Online stream: %v %v", recorded, err)
		}
		got, err := s.Channels.Get(ctx, ch.ChannelID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ActualState != channels.ActualOnline {
			t.Fatalf("round %d: channel is %s (%s) while its stream is Online", i, got.ActualState, got.ActualStateReason)
		}
	}
}

// TestLateCommandReportsDoNotOverwriteALaterCommand: a stop's Offline and
// a start's failure arrive after a new start was recorded; neither applies.
func TestLateCommandReportsDoNotOverwriteALaterCommand(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	a := channels.Actor{Type: "test"}
	p := func(v string) *string { return &v }
	proto := channels.ProtocolRTSP
	ch, err := s.Channels.Create(ctx, a, channels.Input{Name: p("late"), Protocol: &proto, SourceURL: p("rtsp://192.0.2.10/late"),
		App: p("live"), Stream: p("late"), MediaServerID: p("ms1")})
	if err != nil {
		t.Fatal(err)
	}
	_, first, err := s.Channels.Start(ctx, a, ch.ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	_, stop, err := s.Channels.Stop(ctx, a, ch.ChannelID)
	if err != nil {
		t.Fatal(err)
	}
	_, second, err := s.Channels.Start(ctx, a, ch.ChannelID)
	if err != nil || second.CommandID == first.CommandID {
		t.Fatalf("second start %+v %v", second, err)
	}
	if ok, err := s.Channels.SetCommandState(ctx, a, ch.ChannelID, stop.CommandID, channels.ActualOffline, "stopped"); err != nil || ok {
		t.Fatalf("a superseded stop's Offline was recorded: %v %v", ok, err)
	}
	if ok, err := s.Channels.RecordFailedStart(ctx, a, ch.ChannelID, first.CommandID, "old failure"); err != nil || ok {
		t.Fatalf("a superseded start's failure was recorded: %v %v", ok, err)
	}
	got, _ := s.Channels.Get(ctx, ch.ChannelID)
	if got.ActualState != channels.ActualStarting || got.Retry.Attempts != 0 {
		t.Fatalf("channel %s attempts %d", got.ActualState, got.Retry.Attempts)
	}
	if ok, err := s.Channels.RecordFailedStart(ctx, a, ch.ChannelID, second.CommandID, "refused"); err != nil || !ok {
		t.Fatalf("the current start's failure was not recorded: %v %v", ok, err)
	}
	if got, _ = s.Channels.Get(ctx, ch.ChannelID); got.ActualState != channels.ActualRetrying {
		t.Fatalf("after the current start failed: %s", got.ActualState)
	}
}
