package channels

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

var tester = Actor{Type: "api-token", ID: "t1", TraceID: "0123456789abcdef0123456789abcdef"}

// newService runs the catalogue on a real single-node store.
func newService(t *testing.T) (*Service, *raftnode.Node) {
	t.Helper()
	node, keys := storetest.WithKeys(t, Indexes...)
	return &Service{Store: node, Reader: node.State(), Keys: keys}, node
}

func ptr[T any](v T) *T { return &v }

func rtspInput(stream string) Input {
	return Input{Name: ptr("Gate " + stream), Protocol: ptr(ProtocolRTSP), SourceURL: ptr("rtsp://admin:Pa55w0rd!@10.0.0.7:554/Streaming/101"),
		App: ptr("live"), Stream: ptr(stream)}
}

func TestCreateValidation(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	cases := []struct {
		name string
		edit func(*Input)
		want string
	}{
		{"empty name", func(in *Input) { in.Name = ptr("  ") }, "name must be"},
		{"long name", func(in *Input) { in.Name = ptr(strings.Repeat("n", 129)) }, "name must be"},
		{"control character in name", func(in *Input) { in.Name = ptr("a\x07b") }, "control characters"},
		{"long description", func(in *Input) { in.Description = ptr(strings.Repeat("d", 1025)) }, "description must be"},
		{"unknown protocol", func(in *Input) { in.Protocol = ptr(Protocol("rtmp")) }, "protocol must be"},
		{"rtsp without source", func(in *Input) { in.SourceURL = nil }, "sourceUrl is required"},
		{"rtsp with http source", func(in *Input) { in.SourceURL = ptr("http://cam/video") }, "scheme must be rtsp or rtsps"},
		{"source without host", func(in *Input) { in.SourceURL = ptr("rtsp:///x") }, "no host"},
		{"relative source", func(in *Input) { in.SourceURL = ptr("cam/video") }, "not an absolute URL"},
		{"source with space", func(in *Input) { in.SourceURL = ptr("rtsp://cam/a b") }, "spaces"},
		{"source with fragment", func(in *Input) { in.SourceURL = ptr("rtsp://cam/a#b") }, "fragment"},
		{"source with bad port", func(in *Input) { in.SourceURL = ptr("rtsp://cam:99999/a") }, "port"},
		{"source too long", func(in *Input) { in.SourceURL = ptr("rtsp://cam/" + strings.Repeat("a", 2048)) }, "at most 2048"},
		{"credentials without user", func(in *Input) { in.SourceURL = ptr("rtsp://:pw@cam/a") }, "without a user name"},
		{"mask with nothing stored", func(in *Input) { in.SourceURL = ptr("rtsp://***@cam/a") }, "none are stored"},
		{"app with slash", func(in *Input) { in.App = ptr("a/b") }, "app must be"},
		{"empty app", func(in *Input) { in.App = ptr("") }, "app must be"},
		{"stream too long", func(in *Input) { in.Stream = ptr(strings.Repeat("s", 65)) }, "stream must be"},
		{"stream starting with dot", func(in *Input) { in.Stream = ptr(".hidden") }, "stream must be"},
		{"bad vhost", func(in *Input) { in.Vhost = ptr("a b") }, "vhost must be"},
		{"bad transport", func(in *Input) { in.RTSPTransport = ptr(RTSPTransport("sctp")) }, "rtspTransport"},
		{"bad media server", func(in *Input) { in.MediaServerID = ptr("ms/1") }, "mediaServerId"},
		{"bad group key", func(in *Input) { in.GroupKey = ptr(GroupKey("no spaces")) }, "groupKey must be"},
		{"unknown group", func(in *Input) { in.GroupKey = ptr(GroupKey("nowhere")) }, "names no channel group"},
		{"rtsp with ptz", func(in *Input) { in.HasPTZ = ptr(true) }, "hasPtz"},
		{"bad activation", func(in *Input) { in.Activation = ptr(Activation("Later")) }, "activationState"},
		{"gb28181 with source", func(in *Input) { in.Protocol = ptr(ProtocolGB28181) }, "must be empty for protocol gb28181"},
		{"gb28181 short device code", func(in *Input) {
			in.Protocol, in.SourceURL, in.DeviceID, in.DeviceChannelID = ptr(ProtocolGB28181), nil, ptr("3402000000"), ptr("34020000001320000001")
		}, "20-digit"},
		{"gb28181 without channel code", func(in *Input) {
			in.Protocol, in.SourceURL, in.DeviceID = ptr(ProtocolGB28181), nil, ptr("34020000001110000001")
		}, "deviceChannelId must be"},
		{"onvif with neither device nor source", func(in *Input) { in.Protocol, in.SourceURL = ptr(ProtocolONVIF), nil }, "deviceId or a sourceUrl"},
		{"onvif with ftp source", func(in *Input) { in.Protocol, in.SourceURL = ptr(ProtocolONVIF), ptr("ftp://cam/x") }, "scheme must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := rtspInput("s1")
			tc.edit(&in)
			_, err := s.Create(ctx, tester, in)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "Pa55w0rd") || strings.Contains(err.Error(), ":pw@") {
				t.Fatalf("error repeats the credentials: %v", err)
			}
		})
	}
	// The valid forms of each protocol.
	for _, in := range []Input{
		rtspInput("ok1"),
		{Name: ptr("onvif cam"), Protocol: ptr(ProtocolONVIF), DeviceID: ptr("onvif-1"), App: ptr("onvif"), Stream: ptr("cam1")},
		{Name: ptr("gb cam"), Protocol: ptr(ProtocolGB28181), DeviceID: ptr("34020000001110000001"), DeviceChannelID: ptr("34020000001320000001"), App: ptr("rtp"), Stream: ptr("gb1")},
	} {
		if _, err := s.Create(ctx, tester, in); err != nil {
			t.Fatalf("%s: %v", *in.Name, err)
		}
	}
}

func TestSourceCredentialsAreSealedAndMasked(t *testing.T) {
	s, node := newService(t)
	ctx := context.Background()
	ch, err := s.Create(ctx, tester, rtspInput("cred"))
	if err != nil {
		t.Fatal(err)
	}
	if ch.SourceURL != "rtsp://10.0.0.7:554/Streaming/101" || ch.MaskedSourceURL() != "rtsp://***@10.0.0.7:554/Streaming/101" || !ch.HasCredentials() {
		t.Fatalf("stored %q masked %q", ch.SourceURL, ch.MaskedSourceURL())
	}
	// Nothing stored anywhere holds the password in clear.
	resp, err := node.Range(ctx, "/", storeAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.KVs {
		if strings.Contains(string(kv.Value), "Pa55w0rd") {
			t.Fatalf("%s holds the password in clear", kv.Key)
		}
	}
	full, err := s.SourceURL(ctx, ch.ChannelID)
	if err != nil || full != "rtsp://admin:Pa55w0rd%21@10.0.0.7:554/Streaming/101" {
		t.Fatalf("SourceURL = %q, %v", full, err)
	}
	// Sending the masked URL back (with a new path) keeps the credentials.
	ch, err = s.Update(ctx, tester, ch.ChannelID, Input{SourceURL: ptr("rtsp://***@10.0.0.7:554/Streaming/102")})
	if err != nil {
		t.Fatal(err)
	}
	if full, _ := s.SourceURL(ctx, ch.ChannelID); full != "rtsp://admin:Pa55w0rd%21@10.0.0.7:554/Streaming/102" {
		t.Fatalf("after masked update: %q", full)
	}
	// The same credentials again change nothing; new ones replace them.
	before := ch.Revision
	if ch, err = s.Update(ctx, tester, ch.ChannelID, Input{SourceURL: ptr("rtsp://admin:Pa55w0rd!@10.0.0.7:554/Streaming/102")}); err != nil || ch.Revision != before {
		t.Fatalf("same credentials rewrote the channel: %v", err)
	}
	if ch, err = s.Update(ctx, tester, ch.ChannelID, Input{SourceURL: ptr("rtsp://admin:N3w@10.0.0.7:554/Streaming/102")}); err != nil {
		t.Fatal(err)
	}
	if full, _ := s.SourceURL(ctx, ch.ChannelID); full != "rtsp://admin:N3w@10.0.0.7:554/Streaming/102" {
		t.Fatalf("after new credentials: %q", full)
	}
	// A URL without credentials removes them.
	ch, err = s.Update(ctx, tester, ch.ChannelID, Input{SourceURL: ptr("rtsp://10.0.0.7:554/Streaming/102")})
	if err != nil || ch.HasCredentials() {
		t.Fatalf("credentials kept: %v", err)
	}
	// A sealed value is bound to its channel: copied onto another it does
	// not open.
	other, _ := s.Create(ctx, tester, rtspInput("cred2"))
	first, _ := s.Create(ctx, tester, rtspInput("cred3"))
	other.SealedCredentials = first.SealedCredentials
	if _, err := fullURL(s.Keys, other); err == nil {
		t.Fatal("a sealed credential opened on another channel")
	}
}

func TestStreamNameIsUniqueUnderRace(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Create(ctx, tester, rtspInput("same"))
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrDuplicateStream):
			t.Fatalf("unexpected error %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d creates won", won)
	}
	rows, total, err := s.List(ctx, Filter{Stream: "same"})
	if err != nil || total != 1 || len(rows) != 1 {
		t.Fatalf("list = %d %v", total, err)
	}
	// Renaming onto a taken name fails; the freed name is reusable.
	other, err := s.Create(ctx, tester, rtspInput("other"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, tester, other.ChannelID, Input{Stream: ptr("same")}); !errors.Is(err, ErrDuplicateStream) {
		t.Fatalf("rename onto a taken name: %v", err)
	}
	if _, err := s.Update(ctx, tester, other.ChannelID, Input{Stream: ptr("renamed")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, tester, rtspInput("other")); err != nil {
		t.Fatalf("freed name not reusable: %v", err)
	}
}

func TestGroupDeleteRacingCreate(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	for round := range 10 {
		k := GroupKey("g" + string(rune('a'+round)))
		if _, err := s.CreateGroup(ctx, tester, k, "Group", ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var createErr, deleteErr error
		var ch *Channel
		wg.Add(2)
		go func() {
			defer wg.Done()
			in := rtspInput("race" + string(k))
			in.GroupKey = &k
			ch, createErr = s.Create(ctx, tester, in)
		}()
		go func() {
			defer wg.Done()
			deleteErr = s.DeleteGroup(ctx, tester, k)
		}()
		wg.Wait()
		g, gerr := s.Group(ctx, k)
		switch {
		case createErr == nil && deleteErr == nil:
			t.Fatalf("round %d: both won; channel %s is in a deleted group", round, ch.ChannelID)
		case createErr == nil:
			if !errors.Is(deleteErr, ErrGroupNotEmpty) || gerr != nil || g.ChannelCount != 1 {
				t.Fatalf("round %d: create won but delete = %v, group = %+v %v", round, deleteErr, g, gerr)
			}
		case deleteErr == nil:
			if !errors.Is(createErr, ErrInvalid) || !errors.Is(gerr, ErrGroupNotFound) {
				t.Fatalf("round %d: delete won but create = %v, group %v", round, createErr, gerr)
			}
		default:
			t.Fatalf("round %d: both failed: %v / %v", round, createErr, deleteErr)
		}
	}
}

func TestLifecycleAndCommands(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	in := rtspInput("life")
	in.Activation = ptr(ActivationPending)
	ch, err := s.Create(ctx, tester, in)
	if err != nil {
		t.Fatal(err)
	}
	id := ch.ChannelID
	if _, _, err := s.Start(ctx, tester, id); !errors.Is(err, ErrPending) {
		t.Fatalf("start of a pending channel: %v", err)
	}
	if _, err := s.Activate(ctx, tester, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Activate(ctx, tester, id); !errors.Is(err, ErrNotPending) {
		t.Fatalf("second activate: %v", err)
	}
	if _, err := s.Update(ctx, tester, id, Input{Enabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Start(ctx, tester, id); !errors.Is(err, ErrDisabled) {
		t.Fatalf("start of a disabled channel: %v", err)
	}
	s.Update(ctx, tester, id, Input{Enabled: ptr(true)})
	ch, cmd, err := s.Start(ctx, tester, id)
	if err != nil || ch.DesiredState != DesiredRunning || ch.ActualState != ActualStarting || cmd.State != CommandPending || cmd.Action != ActionStart {
		t.Fatalf("start = %+v %+v %v", ch, cmd, err)
	}
	// Repeating start answers the same command.
	if _, again, err := s.Start(ctx, tester, id); err != nil || again.CommandID != cmd.CommandID {
		t.Fatalf("repeated start = %+v %v", again, err)
	}
	// Running channels keep their media identity and cannot be deleted.
	if _, err := s.Update(ctx, tester, id, Input{Stream: ptr("moved")}); !errors.Is(err, ErrRunning) {
		t.Fatalf("rename while running: %v", err)
	}
	if err := s.Delete(ctx, tester, id); !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("delete while running: %v", err)
	}
	// The dispatcher reports progress.
	if _, err := s.MarkCommand(ctx, Actor{Type: "system", ID: "dispatcher"}, cmd.CommandID, CommandDispatched, "nc-1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkCommand(ctx, tester, cmd.CommandID, CommandPending, "", ""); !errors.Is(err, ErrBadTransition) {
		t.Fatalf("backwards: %v", err)
	}
	s.MarkCommand(ctx, tester, cmd.CommandID, CommandSucceeded, "", "")
	if _, err := s.MarkCommand(ctx, tester, cmd.CommandID, CommandFailed, "", "late"); !errors.Is(err, ErrCommandFinished) {
		t.Fatalf("after finish: %v", err)
	}
	if ch, err = s.SetActualState(ctx, tester, id, ActualOnline, "media arrived"); err != nil || ch.ActualState != ActualOnline {
		t.Fatal(err)
	}
	// Failures back off; pause stops the retries; retry clears them.
	s.Backoff = Backoff{Base: time.Second, Max: 8 * time.Second}
	for i := 1; i <= 3; i++ {
		if ch, err = s.RecordFailedAttempt(ctx, tester, id, "connection refused"); err != nil {
			t.Fatal(err)
		}
	}
	if ch.ActualState != ActualRetrying || ch.Retry.Attempts != 3 || ch.Retry.NextRetryAt == nil || ch.Retry.LastError != "connection refused" {
		t.Fatalf("after failures: %+v", ch)
	}
	if wait := time.Until(*ch.Retry.NextRetryAt); wait < 3*time.Second || wait > 5*time.Second {
		t.Fatalf("third retry in %v, want 4s±20%%", wait)
	}
	if ch, err = s.Pause(ctx, tester, id); err != nil || !ch.AutoRecoveryPaused || ch.Retry.NextRetryAt != nil || ch.ActualState != ActualPaused {
		t.Fatalf("pause = %+v %v", ch, err)
	}
	if ch, _ = s.RecordFailedAttempt(ctx, tester, id, "still down"); ch.Retry.NextRetryAt != nil || ch.ActualState != ActualPaused {
		t.Fatalf("a paused channel scheduled a retry: %+v", ch)
	}
	ch, retryCmd, err := s.Retry(ctx, tester, id)
	if err != nil || ch.Retry.Attempts != 0 || ch.AutoRecoveryPaused || retryCmd.CommandID == cmd.CommandID || retryCmd.Action != ActionStart {
		t.Fatalf("retry = %+v %+v %v", ch, retryCmd, err)
	}
	// Stop: desired Stopped, auto-recovery paused, the undispatched start
	// command canceled, a stop command recorded.
	ch, stop, err := s.Stop(ctx, tester, id)
	if err != nil || ch.DesiredState != DesiredStopped || !ch.AutoRecoveryPaused || stop.Action != ActionStop {
		t.Fatalf("stop = %+v %+v %v", ch, stop, err)
	}
	if c, _ := s.Command(ctx, retryCmd.CommandID); c.State != CommandCanceled {
		t.Fatalf("pending start after stop is %s", c.State)
	}
	if _, err := s.ReturnToPending(ctx, tester, id); !errors.Is(err, ErrRunning) {
		t.Fatalf("return while still Starting: %v", err)
	}
	s.SetActualState(ctx, tester, id, ActualOffline, "stopped")
	if _, err := s.ReturnToPending(ctx, tester, id); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, tester, id); err != nil {
		t.Fatal(err)
	}
	// The runtime log outlives the channel and tells the whole story.
	logs, total, err := s.RuntimeLog(ctx, id, LogQuery{Oldest: true, Page: 1, PageSize: 200})
	if err != nil || total < 15 {
		t.Fatalf("runtime log: %d entries, %v", total, err)
	}
	var events []string
	for _, e := range logs {
		events = append(events, e.Event)
	}
	joined := strings.Join(events, " ")
	for _, want := range []string{"channel.created", "channel.activated", "desired_state.changed", "command.recorded", "command.state",
		"actual_state.changed", "attempt.failed", "auto_recovery.paused", "backoff.cleared", "command.canceled", "channel.returned_to_pending", "channel.deleted"} {
		if !strings.Contains(joined, want) {
			t.Errorf("runtime log lacks %s: %s", want, joined)
		}
	}
	if logs[0].Event != "channel.created" || logs[len(logs)-1].Event != "channel.deleted" {
		t.Fatalf("order: %s", joined)
	}
	if only, n, _ := s.RuntimeLog(ctx, id, LogQuery{Kind: LogCommand, Page: 1, PageSize: 200}); n == 0 || only[0].Kind != LogCommand {
		t.Fatalf("kind filter: %d", n)
	}
	future := time.Now().Add(time.Hour)
	if _, n, _ := s.RuntimeLog(ctx, id, LogQuery{From: &future, Page: 1, PageSize: 10}); n != 0 {
		t.Fatalf("from filter: %d", n)
	}
	if _, _, err := s.RuntimeLog(ctx, "no-such-channel", LogQuery{Page: 1, PageSize: 10}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown channel log: %v", err)
	}
}

func TestAutoVideoStartsOnActivation(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	in := rtspInput("auto")
	in.AutoVideo, in.Activation = ptr(true), ptr(ActivationPending)
	ch, err := s.Create(ctx, tester, in)
	if err != nil || ch.DesiredState != DesiredStopped || ch.LastCommandID != "" {
		t.Fatalf("a pending auto-pull channel started: %+v %v", ch, err)
	}
	ch, err = s.Activate(ctx, tester, ch.ChannelID)
	if err != nil || ch.DesiredState != DesiredRunning || ch.LastCommandID == "" {
		t.Fatalf("activation did not start the auto-pull channel: %+v %v", ch, err)
	}
	pending, err := s.PendingCommands(ctx, 10)
	if err != nil || len(pending) != 1 || pending[0].ChannelID != ch.ChannelID {
		t.Fatalf("pending commands = %+v %v", pending, err)
	}
	// Turning auto-pull on starts a channel no one stopped, not a stopped one.
	fresh, _ := s.Create(ctx, tester, rtspInput("fresh"))
	if fresh, err = s.Update(ctx, tester, fresh.ChannelID, Input{AutoVideo: ptr(true)}); err != nil || fresh.DesiredState != DesiredRunning {
		t.Fatalf("autoVideo on: %+v %v", fresh, err)
	}
	stopped, _ := s.Create(ctx, tester, rtspInput("stopped"))
	s.Stop(ctx, tester, stopped.ChannelID)
	if stopped, err = s.Update(ctx, tester, stopped.ChannelID, Input{AutoVideo: ptr(true)}); err != nil || stopped.DesiredState != DesiredStopped {
		t.Fatalf("autoVideo on a stopped channel started it: %+v %v", stopped, err)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: 2 * time.Second, Max: time.Minute, Jitter: 0.2}
	cases := []struct {
		attempt int
		r       float64
		want    time.Duration
	}{
		{1, 0.5, 2 * time.Second},
		{2, 0.5, 4 * time.Second},
		{3, 0, time.Duration(0.8 * float64(8*time.Second))},
		{3, 0.999999, time.Duration(1.199999 * float64(8*time.Second))},
		{6, 0.5, time.Minute},
		{7, 0.99, time.Minute},
		{1000, 0.5, time.Minute},
		{0, 0.5, 2 * time.Second},
	}
	for _, tc := range cases {
		got := b.Delay(tc.attempt, tc.r)
		if d := got - tc.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("Delay(%d, %v) = %v, want %v", tc.attempt, tc.r, got, tc.want)
		}
	}
}

func TestPruneKeepsRecentHistory(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	ch, err := s.Create(ctx, tester, rtspInput("prune"))
	if err != nil {
		t.Fatal(err)
	}
	_, start, _ := s.Start(ctx, tester, ch.ChannelID)
	_, stop, _ := s.Stop(ctx, tester, ch.ChannelID) // cancels the start
	if n, err := s.Prune(ctx, time.Now().Add(-time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("pruned %d recent keys: %v", n, err)
	}
	_, before, _ := s.RuntimeLog(ctx, ch.ChannelID, LogQuery{Page: 1, PageSize: 100})
	n, err := s.Prune(ctx, time.Now().Add(time.Second), 3)
	if err != nil || n != 3 {
		t.Fatalf("first round pruned %d: %v", n, err)
	}
	for n == 3 {
		if n, err = s.Prune(ctx, time.Now().Add(time.Second), 3); err != nil {
			t.Fatal(err)
		}
	}
	if _, after, _ := s.RuntimeLog(ctx, ch.ChannelID, LogQuery{Page: 1, PageSize: 100}); before == 0 || after != 0 {
		t.Fatalf("runtime log %d -> %d entries", before, after)
	}
	if _, err := s.Command(ctx, start.CommandID); !errors.Is(err, ErrCommandNotFound) {
		t.Fatalf("finished command kept: %v", err)
	}
	if c, err := s.Command(ctx, stop.CommandID); err != nil || c.State != CommandPending {
		t.Fatalf("an unfinished command was pruned: %v", err)
	}
}
