package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// camera is the GStreamer RTSP server of test/peers standing in for an IP
// camera, with Digest authentication.
type camera struct {
	port int
}

func startCamera(t *testing.T) *camera {
	t.Helper()
	return &camera{port: testkit.StartCamera(t, "cam", "camPa55word", "digest").Port}
}

// backend is a business backend calling the third-party API with its own
// API token.
type backend struct {
	t     *testing.T
	api   string
	token string
}

func (b backend) call(method, path string, body, out any) (int, []byte) {
	b.t.Helper()
	st, data := doJSON(b.t, b.api, b.token, method, path, body)
	if out != nil && st < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			b.t.Fatalf("%s %s: %d %s: %v", method, path, st, data, err)
		}
	}
	return st, data
}

type lease struct {
	LeaseID, State               string
	ExpiresAt, AbsoluteExpiresAt time.Time
	RenewAfter                   time.Time
	RenewCount                   int
	Sources                      []struct{ Protocol, URL, ContentType, Hint string }
}

// probe reads url with ffprobe for the given seconds (RTSP over TCP) and
// reports the video codec, size, packet count and the DTS span it saw
// (decoding order: with B-frames it is PTS that goes back).
type probeResult struct {
	codec         string
	width, height int
	packets       int
	span          float64
	audio         bool
}

func probe(t *testing.T, url string, seconds int) (probeResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+60)*time.Second)
	defer cancel()
	args := []string{"-v", "error", "-rw_timeout", "10000000"}
	if strings.HasPrefix(url, "rtsp://") {
		args = append(args, "-rtsp_transport", "tcp")
	}
	args = append(args, "-read_intervals", fmt.Sprintf("%%+%d", seconds),
		"-show_entries", "stream=codec_type,codec_name,width,height:packet=stream_index,dts_time", "-of", "json", url)
	out, err := exec.CommandContext(ctx, "ffprobe", args...).CombinedOutput()
	if err != nil {
		return probeResult{}, fmt.Errorf("ffprobe: %w: %s", err, tail(string(out), 400))
	}
	var doc struct {
		Streams []struct {
			CodecType string `json:"codec_type"`
			CodecName string `json:"codec_name"`
			Width     int
			Height    int
		}
		Packets []struct {
			StreamIndex int    `json:"stream_index"`
			DTSTime     string `json:"dts_time"`
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return probeResult{}, fmt.Errorf("ffprobe output: %w", err)
	}
	var r probeResult
	video := -1
	for i, s := range doc.Streams {
		switch s.CodecType {
		case "video":
			video, r.codec, r.width, r.height = i, s.CodecName, s.Width, s.Height
		case "audio":
			r.audio = true
		}
	}
	first, last := -1.0, -1.0
	for _, p := range doc.Packets {
		if p.StreamIndex != video {
			continue
		}
		v, err := strconv.ParseFloat(p.DTSTime, 64)
		if err != nil {
			continue
		}
		if first < 0 {
			first = v
		}
		if v < last {
			return r, fmt.Errorf("video DTS went back from %f to %f", last, v)
		}
		last = v
		r.packets++
	}
	r.span = last - first
	return r, nil
}

// TestLiveFlowEndToEnd is contract B's live flow with real processes: a
// control node, an enrolled agent running the engine, a GStreamer camera,
// and a least-privilege API token: capabilities, list channels, start,
// poll streams until Online, lease, ffprobe every source, renew with the
// same URLs, another token locked out, one-time URLs used once, delete,
// and established connections cut on expiry and on token revocation.
func TestLiveFlowEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cam := startCamera(t)
	cp.startMediaHost(bin, "media-1")

	// The operator registers the camera; its credentials are sealed.
	src := fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port)
	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "Gate camera", "protocol": "rtsp", "sourceUrl": src,
		"app": "live", "stream": "gate", "mediaServerId": "media-1"}, &ch); st != 200 {
		t.Fatalf("create channel: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("channels.view", "streams.view", "streams.play", "channels.manage")}

	// 1. What may this token do?
	var caps struct{ Permissions []string }
	if st, body := be.call("GET", "/api/v2/third-party/capabilities", nil, &caps); st != 200 || len(caps.Permissions) != 4 {
		t.Fatalf("capabilities: %d %s", st, body)
	}
	// 2. Find the channel.
	var list struct {
		Total int
		Rows  []struct{ ChannelID, ActualState, SourceURL string }
	}
	be.call("GET", "/api/v2/third-party/channels?stream=gate", nil, &list)
	if list.Total != 1 || list.Rows[0].ChannelID != ch.ChannelID || strings.Contains(list.Rows[0].SourceURL, "camPa55word") {
		t.Fatalf("channel listing: %+v", list)
	}
	// A lease before the stream runs is refused as not ready.
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease", map[string]any{}, nil); st != 409 ||
		!strings.Contains(string(body), "stream_not_ready") {
		t.Fatalf("lease of an offline stream: %d %s", st, body)
	}
	// 3. Start it and poll the streams until Online.
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d %s", st, body)
	}
	online := func() bool {
		var ss struct{ Total int }
		be.call("GET", "/api/v2/third-party/streams?streamId=gate&state=Online", nil, &ss)
		return ss.Total == 1
	}
	for deadline := time.Now().Add(60 * time.Second); !online(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			var logs, cmds any
			cp.call("GET", "/api/v2/channels/"+ch.ChannelID+"/runtime-logs?pageSize=50", nil, &logs)
			cp.call("GET", "/api/v2/streams/commands?channelId="+ch.ChannelID, nil, &cmds)
			t.Fatalf("the stream did not come Online within 60 s; runtime log %v; commands %v", logs, cmds)
		}
	}
	// An RTSP smoke test from the media server finds the camera's stream;
	// a batch reports each source on its own.
	var raw map[string]any
	if st := cp.call("POST", "/api/v2/streams/smoke-tests/rtsp", map[string]any{"url": src, "transport": "tcp"}, &raw); st != 200 ||
		raw["ok"] != true || raw["videoCodec"] != "H264" || raw["width"] != 320.0 || strings.Contains(fmt.Sprint(raw["url"]), "camPa55word") {
		t.Fatalf("smoke test: %d %v", st, raw)
	}
	var batch struct {
		Results []struct {
			Ok    bool
			Stage string
			Error *string
		}
	}
	cp.call("POST", "/api/v2/streams/smoke-tests/rtsp/batch", map[string]any{"items": []map[string]any{
		{"url": src}, {"url": fmt.Sprintf("rtsp://cam:wrong@127.0.0.1:%d/h264", cam.port), "timeoutSeconds": 5}}}, &batch)
	if len(batch.Results) != 2 || !batch.Results[0].Ok || batch.Results[1].Ok || batch.Results[1].Error == nil {
		t.Fatalf("smoke test batch: %+v", batch)
	}
	// Snapshots: a schedule, a JPEG from a keyframe, tickets bound to the
	// channel and the action.
	if st := cp.call("PUT", "/api/v2/channels/"+ch.ChannelID+"/snapshots/settings", map[string]any{"enabled": true, "intervalSeconds": 10}, nil); st != 200 {
		t.Fatalf("snapshot settings: %d", st)
	}
	var snaps struct {
		LatestAt                *time.Time
		Width, Height           int
		PreviewUrl, DownloadUrl string
	}
	testkit.Eventually(t, 60*time.Second, "a snapshot", func() bool {
		be.call("GET", "/api/v2/channels/"+ch.ChannelID+"/snapshots", nil, &snaps)
		return snaps.LatestAt != nil
	})
	if snaps.Width != 320 || snaps.Height != 240 || snaps.PreviewUrl == "" || snaps.DownloadUrl == "" {
		t.Fatalf("snapshot overview: %+v", snaps)
	}
	get := func(path string, auth bool) (int, http.Header, []byte) {
		req, _ := http.NewRequest("GET", cp.api+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+be.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, body
	}
	if st, h, img := get("/api/v2/channels/"+ch.ChannelID+"/snapshots/latest", true); st != 200 || h.Get("Content-Type") != "image/jpeg" ||
		!bytes.HasPrefix(img, []byte{0xff, 0xd8}) {
		t.Fatalf("snapshot with the token: %d %v", st, h)
	}
	if st, h, _ := get(snaps.PreviewUrl, false); st != 200 || !strings.HasPrefix(h.Get("Content-Disposition"), "inline") {
		t.Fatalf("preview with its ticket: %d %v", st, h)
	}
	if st, h, _ := get(snaps.DownloadUrl, false); st != 200 || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download with its ticket: %d %v", st, h)
	}
	if st, _, _ := get(snaps.PreviewUrl[:len(snaps.PreviewUrl)-2]+"xx", false); st != 401 {
		t.Fatalf("a tampered snapshot ticket: %d", st)
	}
	if st, _, _ := get(strings.Replace(snaps.PreviewUrl, ch.ChannelID, "01a20000-0000-7000-8000-000000000000", 1), false); st != 401 {
		t.Fatalf("a snapshot ticket on another channel: %d", st)
	}
	if st, _, _ := get(strings.Replace(snaps.PreviewUrl, "/snapshots/latest", "/runtime-logs", 1), false); st != 401 {
		t.Fatalf("a snapshot ticket opened another operation: %d", st)
	}
	// 4. Lease it and play every source.
	var l lease
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease", map[string]any{"leaseSeconds": 60}, &l); st != 200 || len(l.Sources) != 4 {
		t.Fatalf("lease: %d %s", st, body)
	}
	if time.Until(l.RenewAfter) > 45*time.Second || l.RenewAfter.Before(time.Now().Add(30*time.Second)) {
		t.Fatalf("renewAfter %s is not about 70%% into a 60 s round", l.RenewAfter)
	}
	for _, s := range l.Sources {
		// 100 frames at 25 fps span 3.96 s from the first to the last. A
		// CI host that stalls the player for seconds can cut one read
		// short, so a short read is tried once more; both are reported.
		var tries []string
		for len(tries) < 2 {
			r, err := probe(t, s.URL, 5)
			if err == nil && r.codec == "h264" && r.width == 320 && r.height == 240 && r.span >= 3.9 && r.packets >= 100 && r.audio {
				break
			}
			tries = append(tries, fmt.Sprintf("%+v %v", r, err))
		}
		if len(tries) == 2 {
			t.Fatalf("%s did not play: %s", s.Protocol, strings.Join(tries, "; "))
		}
		if len(tries) == 1 {
			t.Logf("%s played at the second try; the first read: %s", s.Protocol, tries[0])
		}
	}
	// 5. Renew: the same URLs.
	var renewed lease
	if st, body := be.call("POST", "/api/v2/third-party/playback-leases/"+l.LeaseID+"/renew", map[string]any{}, &renewed); st != 200 || renewed.RenewCount != 1 {
		t.Fatalf("renew: %d %s", st, body)
	}
	for i := range l.Sources {
		if renewed.Sources[i].URL != l.Sources[i].URL {
			t.Fatal("renewal changed a URL")
		}
	}
	// 6. Another token cannot read, renew or delete it.
	other := backend{t: t, api: cp.api, token: cp.newToken("streams.play", "streams.view")}
	for _, c := range []struct{ method, path string }{{"GET", ""}, {"POST", "/renew"}, {"DELETE", ""}} {
		var body any
		if c.method == "POST" {
			body = map[string]any{}
		}
		if st, _ := other.call(c.method, "/api/v2/third-party/playback-leases/"+l.LeaseID+c.path, body, nil); st != 404 {
			t.Fatalf("another token %s %s: %d", c.method, c.path, st)
		}
	}
	// 7. A tampered ticket is refused by the engine.
	flv := l.Sources[0].URL
	tampered := flv[:len(flv)-1] + map[bool]string{true: "A", false: "B"}[!strings.HasSuffix(flv, "A")]
	if _, err := probe(t, tampered, 1); err == nil {
		t.Fatal("a tampered ticket played")
	}
	// 8. One-time URLs work once.
	var once struct {
		Sources []struct{ Protocol, URL string }
	}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback", map[string]any{"protocols": []string{"http-flv"}}, &once); st != 200 ||
		len(once.Sources) != 1 {
		t.Fatalf("one-time URLs: %d %s", st, body)
	}
	if _, err := probe(t, once.Sources[0].URL, 2); err != nil {
		t.Fatalf("first use of a one-time URL: %v", err)
	}
	if _, err := probe(t, once.Sources[0].URL, 1); err == nil {
		t.Fatal("a one-time URL played twice")
	}
	// 9. Delete: new connections are refused.
	if st, body := be.call("DELETE", "/api/v2/third-party/playback-leases/"+l.LeaseID, nil, nil); st != 200 {
		t.Fatalf("delete: %d %s", st, body)
	}
	if _, err := probe(t, flv, 1); err == nil {
		t.Fatal("a deleted lease's URL still plays")
	}

	// 10. Established connections are cut within 5 s when the lease expires
	// and when the creating token is revoked.
	watch := func(url string) (done chan error) {
		done = make(chan error, 1)
		cmd := exec.Command("ffmpeg", "-v", "error", "-rw_timeout", "10000000", "-i", url, "-t", "120", "-f", "null", "-")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		go func() { done <- cmd.Wait() }()
		return done
	}
	leaseFor := func(b backend) lease {
		var l lease
		if st, body := b.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease", map[string]any{"protocols": []string{"http-flv"}}, &l); st != 200 {
			t.Fatalf("lease: %d %s", st, body)
		}
		return l
	}
	cutWithin := func(what string, done chan error, act func()) {
		select {
		case err := <-done:
			t.Fatalf("%s: the player stopped before the cut: %v", what, err)
		case <-time.After(3 * time.Second):
		}
		act()
		start := time.Now()
		select {
		case <-done:
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("%s: cut after %s", what, d)
			}
		case <-time.After(5*time.Second + 500*time.Millisecond):
			t.Fatalf("%s: the established connection was not cut within 5 s", what)
		}
	}
	expiring := leaseFor(be)
	cutWithin("expiry", watch(expiring.Sources[0].URL), func() {
		// Age the lease past its round, as time would.
		ctx := context.Background()
		kv, _, _ := store.Get(ctx, cp.s.Node, playback.LeasesPrefix+expiring.LeaseID, store.Local)
		var rec playback.Lease
		json.Unmarshal(kv.Value, &rec)
		rec.ExpiresAt = time.Now().Add(-time.Second)
		b, _ := json.Marshal(rec)
		cp.s.Node.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(kv.Key, b)}})
	})
	doomedToken := cp.newToken("streams.play")
	doomed := backend{t: t, api: cp.api, token: doomedToken}
	revoked := leaseFor(doomed)
	cutWithin("token revocation", watch(revoked.Sources[0].URL), func() {
		rec, err := apitoken.Lookup(context.Background(), cp.s.Node.State(), doomedToken)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		rec.RevokedAt = &now
		op, _ := apitoken.Put(*rec)
		cp.s.Node.Txn(context.Background(), store.TxnRequest{Then: []store.Op{op}})
	})
	// A console session (the web console's live view) leases too: the lease
	// is that session's alone, and its end cuts the players.
	sess := consoleLogin(t, cp)
	var sl lease
	if st, body := sess.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease", map[string]any{"protocols": []string{"http-flv"}}, &sl); st/100 != 2 ||
		len(sl.Sources) != 1 {
		t.Fatalf("a console session's lease: %d %s", st, body)
	}
	if st, _ := be.call("GET", "/api/v2/third-party/playback-leases/"+sl.LeaseID, nil, nil); st != 404 {
		t.Fatalf("an API token read a console session's lease: %d", st)
	}
	if st, body := sess.call("POST", "/api/v2/third-party/playback-leases/"+sl.LeaseID+"/renew", map[string]any{}, nil); st != 200 {
		t.Fatalf("the session renews its lease: %d %s", st, body)
	}
	if r, err := probe(t, sl.Sources[0].URL, 2); err != nil || r.codec != "h264" {
		t.Fatalf("a console session's lease plays: %+v %v", r, err)
	}
	cutWithin("console logout", watch(sl.Sources[0].URL), func() {
		if st, body := sess.call("POST", "/api/v2/auth/logout", nil, nil); st/100 != 2 {
			t.Fatalf("logout: %d %s", st, body)
		}
	})
	if _, err := probe(t, sl.Sources[0].URL, 1); err == nil {
		t.Fatal("a logged-out session's lease still plays")
	}

	// The players listing shows nothing left of the cut leases.
	var players struct {
		Rows []struct{ LeaseID string }
	}
	cp.call("GET", "/api/v2/streams/players?mediaServerId=media-1", nil, &players)
	for _, p := range players.Rows {
		if p.LeaseID == expiring.LeaseID || p.LeaseID == revoked.LeaseID || p.LeaseID == sl.LeaseID {
			t.Fatalf("a cut lease still has a player: %+v", players)
		}
	}
}
