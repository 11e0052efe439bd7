package playback

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// The collaborators are small structs with function fields; the store is
// a real single-node raft store.
type streamsFunc func(ctx context.Context, id string) (StreamLocation, error)

func (f streamsFunc) Locate(ctx context.Context, id string) (StreamLocation, error) {
	return f(ctx, id)
}

// LocateStream knows one pushed stream, live/pushed, Online on ms1.
func (f streamsFunc) LocateStream(_ context.Context, l StreamLocator) (StreamLocation, error) {
	if l.App == "live" && l.Stream == "pushed" && l.Vhost == DefaultVhost && (l.MediaServerID == "" || l.MediaServerID == "ms1") {
		return StreamLocation{MediaServerID: "ms1", Vhost: DefaultVhost, App: "live", Stream: "pushed", Online: true}, nil
	}
	return StreamLocation{}, ErrStreamNotReady
}

type mediaFunc func(ctx context.Context, id string) (string, error)

func (f mediaFunc) BaseURL(ctx context.Context, id string) (string, error) { return f(ctx, id) }

// RTSPBaseURL is the HTTP base's host on port 8554.
func (f mediaFunc) RTSPBaseURL(ctx context.Context, id string) (string, error) {
	b, err := f(ctx, id)
	if err != nil {
		return "", err
	}
	u, _ := url.Parse(b)
	return "rtsp://" + u.Hostname() + ":8554", nil
}

type cutterFunc func(ctx context.Context, server, lease string) error

func (f cutterFunc) Cut(ctx context.Context, server, lease string) error {
	return f(ctx, server, lease)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type fixture struct {
	s      *Service
	clk    *clock
	tokens map[string]TokenState
	cuts   []string
	mu     sync.Mutex
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	node := storetest.SingleNode(t, LeaseIndex)
	f := &fixture{clk: &clock{t: time.Now().UTC()}, tokens: map[string]TokenState{
		"tokA": {Valid: true, Permissions: []string{"streams.play"}},
		"tokB": {Valid: true, Permissions: []string{"streams.play"}},
	}}
	f.s = &Service{Store: node, Reader: node.State(), MACKeys: [][]byte{[]byte("ticket-key-ticket-key-ticket-key")}, Now: f.clk.now,
		Revision: node.Revision, Grants: permission.Grants,
		Streams: streamsFunc(func(_ context.Context, id string) (StreamLocation, error) {
			switch id {
			case "cam1":
				return StreamLocation{ChannelID: id, MediaServerID: "ms1", Vhost: DefaultVhost, App: "live", Stream: "cam1", Online: true}, nil
			case "cam2":
				return StreamLocation{ChannelID: id, MediaServerID: "ms1", Vhost: DefaultVhost, App: "live", Stream: "cam2", Online: true}, nil
			case "offline":
				return StreamLocation{ChannelID: id, Vhost: DefaultVhost, App: "live", Stream: "off"}, nil
			}
			return StreamLocation{}, ErrNotFound
		}),
		Media: mediaFunc(func(context.Context, string) (string, error) { return "http://media.example:8088", nil }),
		Tokens: func(_ context.Context, id string) (TokenState, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.tokens[id], nil
		},
		Cutter: cutterFunc(func(_ context.Context, server, lease string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.cuts = append(f.cuts, server+"/"+lease)
			return nil
		}),
	}
	return f
}

var callerA = Caller{TokenID: "tokA", Permissions: []string{"streams.play"}}
var callerB = Caller{TokenID: "tokB", Permissions: []string{"streams.play"}}

func ticketOf(t *testing.T, src Source) (path string, params map[string]string) {
	t.Helper()
	u, err := url.Parse(src.URL)
	if err != nil {
		t.Fatal(err)
	}
	params = map[string]string{}
	for k, v := range u.Query() {
		params[k] = v[0]
	}
	return u.Path, params
}

func play(f *fixture, stream, proto string, params map[string]string) Decision {
	d, err := f.s.AuthorizePlay(context.Background(), PlayRequest{MediaServerID: "ms1", App: "live", Stream: stream, Protocol: proto, Params: params})
	if err != nil {
		panic(err)
	}
	return d
}

func ip(v int) *int { return &v }

func TestLeaseLifecycleAndTickets(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	l, srcs, err := f.s.CreateLiveLease(ctx, callerA, "cam1", LeaseRequest{LeaseSeconds: ip(60)})
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 4 || l.State != StateActive || l.RenewAfter.Sub(l.CreatedAt) < 39*time.Second || l.RenewAfter.Sub(l.CreatedAt) > 43*time.Second {
		t.Fatalf("lease %+v sources %d", l, len(srcs))
	}
	// Each source's URL, and whether a browser plays it without a
	// JavaScript player (HLS in Safari, fMP4 in Chromium).
	want := map[Protocol]struct {
		url    string
		native bool
	}{
		ProtoFLV:  {"http://media.example:8088/live/cam1.live.flv", false},
		ProtoFMP4: {"http://media.example:8088/live/cam1.live.mp4", true},
		ProtoHLS:  {"http://media.example:8088/live/cam1/hls.m3u8", true},
		ProtoRTSP: {"rtsp://media.example:8554/live/cam1", false},
	}
	for _, src := range srcs {
		_, params := ticketOf(t, src)
		w := want[src.Protocol]
		if !strings.HasPrefix(src.URL, w.url+"?"+TicketParam+"=") || src.BrowserNative != w.native || src.ContentType == "" ||
			!strings.Contains(src.Hint, "while the lease is renewed") || strings.Contains(src.Hint, "mpegts.js in fMP4") {
			t.Fatalf("source %+v", src)
		}
		if d := play(f, "cam1", string(src.Protocol), params); !d.Allow || d.LeaseID != l.LeaseID || d.CacheFor <= 0 || d.CacheFor > maxDecisionCache {
			t.Fatalf("valid ticket refused: %+v", d)
		}
	}
	_, params := ticketOf(t, srcs[0])
	// Cross-stream, tampered and missing tickets are refused.
	if d := play(f, "cam2", "http-flv", params); d.Allow {
		t.Fatal("a ticket played another stream")
	}
	tampered := map[string]string{TicketParam: params[TicketParam][:len(params[TicketParam])-2] + "AA"}
	if d := play(f, "cam1", "http-flv", tampered); d.Allow {
		t.Fatal("a tampered ticket played")
	}
	if d := play(f, "cam1", "http-flv", nil); d.Allow || !strings.Contains(d.Reason, TicketParam) {
		t.Fatalf("no ticket: %+v", d)
	}
	// Another token cannot see, renew or delete the lease.
	if _, _, err := f.s.ReadLease(ctx, callerB, l.LeaseID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another token read the lease: %v", err)
	}
	if _, _, err := f.s.Renew(ctx, callerB, l.LeaseID, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another token renewed the lease: %v", err)
	}
	if _, err := f.s.Revoke(ctx, callerB, l.LeaseID, "", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another token deleted the lease: %v", err)
	}
	// Renewal keeps the URLs.
	f.clk.add(45 * time.Second)
	r, rsrcs, err := f.s.Renew(ctx, callerA, l.LeaseID, nil)
	if err != nil || r.RenewCount != 1 || !r.ExpiresAt.After(l.ExpiresAt) {
		t.Fatalf("renew: %+v %v", r, err)
	}
	for i := range rsrcs {
		if rsrcs[i].URL != srcs[i].URL {
			t.Fatal("renewal changed a URL")
		}
	}
	// Expiry without renewal: refused and cut by the sweeper.
	f.clk.add(61 * time.Second)
	if d := play(f, "cam1", "http-flv", params); d.Allow {
		t.Fatal("an expired lease played")
	}
	if _, _, err := f.s.Renew(ctx, callerA, l.LeaseID, nil); !errors.Is(err, ErrLeaseConflict) {
		t.Fatalf("renewing an expired lease: %v", err)
	}
	if err := f.s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	got, _, _ := f.s.Get(ctx, l.LeaseID)
	if got.State != StateExpired || !got.CutDone || len(f.cuts) != 1 || f.cuts[0] != "ms1/"+l.LeaseID {
		t.Fatalf("after sweep: %+v cuts %v", got, f.cuts)
	}
}

func TestRevokeAndTokenLoss(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	l, srcs, err := f.s.CreateLiveLease(ctx, callerA, "cam1", LeaseRequest{Protocols: []string{"hls"}})
	if err != nil {
		t.Fatal(err)
	}
	_, params := ticketOf(t, srcs[0])
	if d := play(f, "cam1", "http-flv", params); d.Allow {
		t.Fatal("a protocol the lease does not cover played")
	}
	// DELETE refuses new connections and keeps established ones by default.
	if _, err := f.s.Revoke(ctx, callerA, l.LeaseID, "viewer left", false); err != nil {
		t.Fatal(err)
	}
	if d := play(f, "cam1", "hls", params); d.Allow {
		t.Fatal("a revoked lease played")
	}
	f.s.Sweep(ctx)
	if len(f.cuts) != 0 {
		t.Fatalf("a plain DELETE cut connections: %v", f.cuts)
	}
	if _, _, err := f.s.Renew(ctx, callerA, l.LeaseID, nil); !errors.Is(err, ErrLeaseConflict) {
		t.Fatalf("a revoked lease was revived: %v", err)
	}
	// The creating token loses its permission: the lease ends and is cut.
	l2, srcs2, err := f.s.CreateLiveLease(ctx, callerA, "cam1", LeaseRequest{})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.tokens["tokA"] = TokenState{Valid: true, Permissions: []string{"channels.view"}}
	f.mu.Unlock()
	// Asked by the creating token, now without streams.play: 403, not a
	// lease conflict and not a missing lease.
	lostA := Caller{TokenID: "tokA", Permissions: []string{"channels.view"}}
	if _, _, err := f.s.Renew(ctx, lostA, l2.LeaseID, nil); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("renewal by the token that lost streams.play: %v", err)
	}
	if _, _, err := f.s.ReadLease(ctx, lostA, l2.LeaseID); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("read by the token that lost streams.play: %v", err)
	}
	_, params2 := ticketOf(t, srcs2[0])
	if d := play(f, "cam1", "http-flv", params2); d.Allow {
		t.Fatal("a lease played after its token lost streams.play")
	}
	f.s.Sweep(ctx)
	got, _, _ := f.s.Get(ctx, l2.LeaseID)
	if got.State != StateRevoked || len(f.cuts) != 1 {
		t.Fatalf("after the token lost its permission: %+v cuts %v", got, f.cuts)
	}
}

func TestLeaseValidationAndLimits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exp := f.clk.now().Add(30 * time.Minute)
	for _, tc := range []struct {
		name    string
		c       Caller
		channel string
		req     LeaseRequest
		want    error
	}{
		{"lease too short", callerA, "cam1", LeaseRequest{LeaseSeconds: ip(59)}, ErrInvalid},
		{"lease too long", callerA, "cam1", LeaseRequest{LeaseSeconds: ip(601)}, ErrInvalid},
		{"absolute shorter than lease", callerA, "cam1", LeaseRequest{LeaseSeconds: ip(120), AbsoluteLifetimeSeconds: ip(100)}, ErrInvalid},
		{"absolute too long", callerA, "cam1", LeaseRequest{AbsoluteLifetimeSeconds: ip(43201)}, ErrInvalid},
		{"unknown protocol", callerA, "cam1", LeaseRequest{Protocols: []string{"rtmp"}}, ErrInvalid},
		{"unknown channel", callerA, "nope", LeaseRequest{}, ErrNotFound},
		{"offline stream", callerA, "offline", LeaseRequest{}, ErrStreamNotReady},
	} {
		if _, _, err := f.s.CreateLiveLease(ctx, tc.c, tc.channel, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Never beyond the token's expiry.
	c := callerA
	c.ExpiresAt = &exp
	l, _, err := f.s.CreateLiveLease(ctx, c, "cam1", LeaseRequest{})
	if err != nil || !l.AbsoluteExpiresAt.Equal(exp) {
		t.Fatalf("lease of a token expiring in 30 min: %+v %v", l, err)
	}
	// The last round stops at the absolute end; renewing there conflicts.
	l, _, err = f.s.CreateLiveLease(ctx, callerA, "cam1", LeaseRequest{LeaseSeconds: ip(60), AbsoluteLifetimeSeconds: ip(90)})
	if err != nil {
		t.Fatal(err)
	}
	f.clk.add(50 * time.Second)
	r, _, err := f.s.Renew(ctx, callerA, l.LeaseID, nil)
	if err != nil || !r.ExpiresAt.Equal(l.AbsoluteExpiresAt) {
		t.Fatalf("renew near the end: %+v %v", r, err)
	}
	if _, _, err := f.s.Renew(ctx, callerA, l.LeaseID, nil); !errors.Is(err, ErrLeaseConflict) {
		t.Fatalf("renew at the absolute end: %v", err)
	}
}

func TestOneTimeURLsWorkOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.s.CreateOneTimeLinks(ctx, callerA, "cam1", nil, ip(29)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("lifetime 29: %v", err)
	}
	if _, err := f.s.CreateOneTimeLinks(ctx, callerA, "offline", nil, nil); !errors.Is(err, ErrStreamNotReady) {
		t.Fatalf("offline: %v", err)
	}
	p, err := f.s.CreateOneTimeLinks(ctx, callerA, "cam1", []string{"http-flv", "hls"}, nil)
	if err != nil || len(p.Sources) != 2 {
		t.Fatalf("%+v %v", p, err)
	}
	// A one-time URL's advice is about one use, not about a lease.
	for _, src := range p.Sources {
		if strings.Contains(src.Hint, "lease is renewed") || !strings.Contains(src.Hint, "one player, once") {
			t.Fatalf("one-time source hint: %q", src.Hint)
		}
	}
	_, params := ticketOf(t, p.Sources[0])
	// Two players race for one URL: exactly one gets in.
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if play(f, "cam1", "http-flv", params).Allow {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != 1 {
		t.Fatalf("a one-time URL admitted %d players", allowed)
	}
	// The HLS URL is a separate grant; an expired one is refused.
	_, hls := ticketOf(t, p.Sources[1])
	f.clk.add(121 * time.Second)
	if d := play(f, "cam1", "hls", hls); d.Allow {
		t.Fatal("an expired one-time URL played")
	}
}

func FuzzAuthorizeTicket(f *testing.F) {
	s := &Service{MACKeys: [][]byte{[]byte("fuzz-ticket-key-fuzz-ticket-key!")}}
	f.Add(s.ticket(kindLease, "01a2055c-42d5-7b9f-9bff-f65073844549", DefaultVhost, "live", "cam1"))
	f.Add("L.x.y")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		if p, ok := s.parseTicket(tok, DefaultVhost, "live", "cam1"); ok && s.ticket(p.kind, p.id, DefaultVhost, "live", "cam1") != tok {
			t.Fatalf("accepted a ticket it would not have issued: %q", tok)
		}
	})
}

// A stream no channel owns (an RTSP push) is leased by its locator and
// plays exactly like a channel's: same sources, same ticket check.
func TestStreamLeaseByLocator(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	l, srcs, err := f.s.CreateStreamLease(ctx, callerA, StreamLocator{App: "live", Stream: "pushed"}, LeaseRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if l.ResourceKind != KindLive || l.ResourceID != "ms1/__defaultVhost__/live/pushed" || l.MediaServerID != "ms1" || len(srcs) != 4 {
		t.Fatalf("lease %+v, %d sources", l, len(srcs))
	}
	for _, src := range srcs {
		if _, params := ticketOf(t, src); !play(f, "pushed", string(src.Protocol), params).Allow {
			t.Fatalf("%s refused", src.Protocol)
		}
	}
	_, params := ticketOf(t, srcs[0])
	if play(f, "cam1", "http-flv", params).Allow {
		t.Fatal("a stream lease's ticket played another stream")
	}
	for _, tc := range []struct {
		loc  StreamLocator
		want error
	}{
		{StreamLocator{App: "live", Stream: "absent"}, ErrStreamNotReady},
		{StreamLocator{MediaServerID: "ms2", App: "live", Stream: "pushed"}, ErrStreamNotReady},
		{StreamLocator{App: "live"}, ErrInvalid},
	} {
		if _, _, err := f.s.CreateStreamLease(ctx, callerA, tc.loc, LeaseRequest{}); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.loc, err, tc.want)
		}
	}
}

// TestWebRTCSource: a lease asked for webrtc gets a WHEP URL on the media
// server whose ticket on_play admits for protocol webrtc only; a lease
// without it does not cover WebRTC players.
func TestWebRTCSource(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, srcs, err := f.s.CreateLiveLease(ctx, callerA, "cam1", LeaseRequest{Protocols: []string{"webrtc"}, LeaseSeconds: ip(60)})
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 1 || srcs[0].Protocol != ProtoWebRTC || !strings.HasPrefix(srcs[0].URL, "http://media.example:8088/live/cam1/whep?"+TicketParam+"=") ||
		srcs[0].ContentType != "application/sdp" || !srcs[0].BrowserNative || !strings.Contains(srcs[0].Hint, "WHEP") {
		t.Fatalf("sources %+v", srcs)
	}
	_, params := ticketOf(t, srcs[0])
	if d := play(f, "cam1", "webrtc", params); !d.Allow {
		t.Fatalf("the WHEP ticket was refused: %+v", d)
	}
	if d := play(f, "cam1", "http-flv", params); d.Allow {
		t.Fatal("a webrtc-only lease played HTTP-FLV")
	}
	_, srcs, err = f.s.CreateLiveLease(ctx, callerA, "cam1", LeaseRequest{LeaseSeconds: ip(60)})
	if err != nil {
		t.Fatal(err)
	}
	_, params = ticketOf(t, srcs[0])
	if d := play(f, "cam1", "webrtc", params); d.Allow || !strings.Contains(d.Reason, "webrtc") {
		t.Fatalf("a lease without webrtc admitted a WebRTC player: %+v", d)
	}
}

// A live source's hint says what its protocol leaves out of this stream,
// by the codecs its media server reported; the general advice follows.
func TestSourcesNoteTheStreamsCodecs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	codecs := map[string][]string{"cam1": {"VP8", "Opus"}, "cam2": {"H264", "AAC"}}
	f.s.Codecs = func(_ context.Context, server, _, app, stream string) ([]string, error) {
		if server != "ms1" || app != "live" {
			t.Errorf("codecs asked of %s %s", server, app)
		}
		return codecs[stream], nil
	}
	hints := func(channel string) map[Protocol]string {
		t.Helper()
		_, srcs, err := f.s.CreateLiveLease(ctx, callerA, channel, LeaseRequest{Protocols: []string{"http-flv", "hls", "webrtc", "rtsp"}, LeaseSeconds: ip(60)})
		if err != nil {
			t.Fatal(err)
		}
		out := map[Protocol]string{}
		for _, s := range srcs {
			out[s.Protocol] = s.Hint
		}
		return out
	}
	vp8 := hints("cam1")
	if !strings.HasPrefix(vp8[ProtoFLV], "This stream (VP8, Opus) has no track FLV can carry: this URL answers 406 no_common_codec. One long") ||
		!strings.HasPrefix(vp8[ProtoHLS], "This stream's video is VP8: HLS plays it when") ||
		strings.HasPrefix(vp8[ProtoWebRTC], "This stream") || strings.HasPrefix(vp8[ProtoRTSP], "This stream") {
		t.Fatalf("VP8 + Opus hints: %q", vp8)
	}
	h264 := hints("cam2")
	if !strings.HasPrefix(h264[ProtoWebRTC], "This stream's audio is AAC, which WebRTC cannot carry: the session has no audio. WHEP") ||
		strings.HasPrefix(h264[ProtoFLV], "This stream") || strings.HasPrefix(h264[ProtoHLS], "This stream") {
		t.Fatalf("H.264 + AAC hints: %q", h264)
	}
	// A stream whose tracks cannot be read still gets its URLs.
	f.s.Codecs = func(context.Context, string, string, string, string) ([]string, error) {
		return nil, errors.New("store unavailable")
	}
	if h := hints("cam1"); strings.HasPrefix(h[ProtoFLV], "This stream") || !strings.HasPrefix(h[ProtoFLV], "One long") {
		t.Fatalf("hints without codecs: %q", h)
	}
}

func TestStreamNoteByCodecs(t *testing.T) {
	for _, c := range []struct {
		p      Protocol
		codecs []string
		want   string
	}{
		{ProtoFLV, []string{"VP8", "AAC"}, "This stream's video is VP8, which FLV cannot carry: this URL plays its audio only. "},
		{ProtoFLV, []string{"H264", "Opus"}, "This stream's audio is Opus, which FLV cannot carry: this URL plays its video only. "},
		{ProtoFLV, []string{"H265", "PCMA"}, ""},
		{ProtoWebRTC, []string{"H265", "AAC"}, "This stream's video is H.265: only a browser whose offer has H265 gets video. " +
			"This stream's audio is AAC, which WebRTC cannot carry: the session has no audio. "},
		{ProtoWebRTC, []string{"H264", "PCMU"}, ""},
		{ProtoFMP4, []string{"VP8", "Opus"}, ""},
		{ProtoFLV, nil, ""},
	} {
		if got := streamNote(c.p, c.codecs); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.p, c.codecs, got, c.want)
		}
	}
}
