package playback

import (
	"context"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

const fileA = "01a20000-0000-7000-8000-0000000000aa"

// recordedRequest is what the engine's recorded-file route asks on_play
// for a URL, as the given client.
func recordedRequest(t *testing.T, u, client string) PlayRequest {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(p.Path, engineapi.RecordPlaybackPath), ".mp4")
	app := engineapi.RecordPlaybackApp
	if p.Query().Get(engineapi.RecordDownloadParam) == "1" {
		app = engineapi.RecordDownloadApp
	}
	params := map[string]string{}
	for k, v := range p.Query() {
		params[k] = v[0]
	}
	return PlayRequest{MediaServerID: "ms1", Vhost: engineapi.RecordPlaybackVhost, App: app, Stream: id, Protocol: "http-fmp4",
		Params: params, RemoteAddr: client}
}

func decide(t *testing.T, f *fixture, r PlayRequest) Decision {
	t.Helper()
	d, err := f.s.AuthorizePlay(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestMediaLinks: a link admits the first client only (every Range
// request of it), never the other action or another file, nothing once
// expired, the file deleted or the token's permission gone; each action
// needs its own permission; the prune removes it after its time.
func TestMediaLinks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var playable atomic.Bool
	playable.Store(true)
	f.s.Resources = func(_ context.Context, kind ResourceKind, id string) (bool, string, error) {
		return kind == KindRecordingFile && id == fileA && playable.Load(), "the recording file is SoftDeleted", nil
	}
	f.tokens["tokR"] = TokenState{Valid: true, Permissions: []string{"recordings.play", "recordings.download"}}
	rec := Caller{TokenID: "tokR", Permissions: []string{"recordings.play", "recordings.download"}}
	req := MediaLinkRequest{Kind: KindRecordingFile, ResourceID: fileA, MediaServerID: "ms1", Action: ActionPlay}

	for _, bad := range []MediaLinkRequest{
		{Kind: KindRecordingFile, ResourceID: fileA, MediaServerID: "ms1", Action: "stream"},
		{Kind: KindLive, ResourceID: "cam1", MediaServerID: "ms1", Action: ActionPlay},
		{Kind: KindRecordingFile, ResourceID: fileA, MediaServerID: "ms1", Action: ActionPlay, LifetimeSeconds: ip(5)},
		{Kind: KindRecordingFile, ResourceID: fileA, MediaServerID: "ms1", Action: ActionPlay, LifetimeSeconds: ip(3600)},
	} {
		if _, err := f.s.CreateMediaLink(ctx, rec, bad); err == nil {
			t.Fatalf("%+v was accepted", bad)
		}
	}
	if _, err := f.s.CreateMediaLink(ctx, Caller{TokenID: "tokR", Permissions: []string{"recordings.play"}},
		MediaLinkRequest{Kind: KindRecordingFile, ResourceID: fileA, MediaServerID: "ms1", Action: ActionDownload}); err == nil {
		t.Fatal("a download link without recordings.download")
	}

	play, err := f.s.CreateMediaLink(ctx, rec, req)
	if err != nil {
		t.Fatal(err)
	}
	if !play.SupportsRange || play.Action != ActionPlay || play.ExpiresAt.Sub(f.clk.now()) != 120*time.Second ||
		!strings.HasPrefix(play.URL, "http://media.example:8088/record/"+fileA+".mp4?svc_ticket=M.") {
		t.Fatalf("link %+v", play)
	}
	req.Action = ActionDownload
	down, err := f.s.CreateMediaLink(ctx, rec, req)
	if err != nil || !strings.Contains(down.URL, "download=1") {
		t.Fatalf("download link %+v %v", down, err)
	}

	first := recordedRequest(t, play.URL, "10.0.0.7:50000")
	if d := decide(t, f, first); !d.Allow || d.CacheFor != 0 {
		t.Fatalf("first use: %+v", d)
	}
	// The same client's next Range request (another port) plays on.
	again := first
	again.RemoteAddr = "10.0.0.7:50001"
	if d := decide(t, f, again); !d.Allow {
		t.Fatalf("the same client again: %+v", d)
	}
	other := first
	other.RemoteAddr = "10.0.0.8:50000"
	if d := decide(t, f, other); d.Allow {
		t.Fatal("a second client used the link")
	}
	// The playback ticket does not download, nor on another file.
	asDownload := first
	asDownload.App = engineapi.RecordDownloadApp
	if d := decide(t, f, asDownload); d.Allow {
		t.Fatal("a playback link downloaded")
	}
	otherFile := first
	otherFile.Stream = "01a20000-0000-7000-8000-0000000000bb"
	if d := decide(t, f, otherFile); d.Allow {
		t.Fatal("a link opened another file")
	}
	dl := recordedRequest(t, down.URL, "10.0.0.9:1")
	if d := decide(t, f, dl); !d.Allow {
		t.Fatalf("download: %+v", d)
	}
	// A deleted file, then a token without the permission, then expiry.
	playable.Store(false)
	if d := decide(t, f, again); d.Allow || !strings.Contains(d.Reason, "SoftDeleted") {
		t.Fatalf("a deleted file: %+v", d)
	}
	playable.Store(true)
	f.mu.Lock()
	f.tokens["tokR"] = TokenState{Valid: true, Permissions: []string{"recordings.play"}}
	f.mu.Unlock()
	if d := decide(t, f, dl); d.Allow {
		t.Fatal("a download link outlived recordings.download")
	}
	if d := decide(t, f, again); !d.Allow {
		t.Fatalf("the playback link after recordings.download went: %+v", d)
	}
	f.clk.add(121 * time.Second)
	if d := decide(t, f, again); d.Allow {
		t.Fatal("an expired link played")
	}
	if err := f.s.prune(ctx); err != nil {
		t.Fatal(err)
	}
	if l, _, err := f.s.readLink(ctx, strings.Split(strings.Split(play.URL, "svc_ticket=M.")[1], ".")[0]); err != nil || l != nil {
		t.Fatalf("the expired link was not pruned: %+v %v", l, err)
	}
}

// TestSystemRecordedURL: the control plane's own ticket reads the file for
// a minute, never another file or action, and nothing of a deleted file.
func TestSystemRecordedURL(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var playable atomic.Bool
	playable.Store(true)
	f.s.Resources = func(_ context.Context, _ ResourceKind, id string) (bool, string, error) {
		return id == fileA && playable.Load(), "gone", nil
	}
	u, err := f.s.SystemRecordedURL(ctx, KindRecordingFile, fileA, "ms1", ActionDownload)
	if err != nil {
		t.Fatal(err)
	}
	r := recordedRequest(t, u, "127.0.0.1:1")
	if d := decide(t, f, r); !d.Allow || d.CacheFor != 0 {
		t.Fatalf("system ticket: %+v", d)
	}
	if d := decide(t, f, r); !d.Allow {
		t.Fatal("a system ticket is not single-use; a proxied Range request may repeat it")
	}
	asPlay := r
	asPlay.App = engineapi.RecordPlaybackApp
	if d := decide(t, f, asPlay); d.Allow {
		t.Fatal("a download ticket played")
	}
	playable.Store(false)
	if d := decide(t, f, r); d.Allow {
		t.Fatal("a deleted file was read")
	}
	playable.Store(true)
	f.clk.add(61 * time.Second)
	if d := decide(t, f, r); d.Allow {
		t.Fatal("an old system ticket was accepted")
	}
}
