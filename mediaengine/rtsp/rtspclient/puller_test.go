package rtspclient_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspclient"
	"github.com/svcplatform/svc/test/testkit"
)

// frameLog collects what a Puller delivers.
type frameLog struct {
	mu       sync.Mutex
	frames   []*media.Frame
	tracks   [][]*media.Track
	states   []rtspclient.PullerState
	lastErrs []error
	// udp: the media may come over UDP (UDP or automatic transport).
	udp bool
}

func (l *frameLog) config(url string, transport rtspclient.TransportMode) rtspclient.PullerConfig {
	l.udp = transport != rtspclient.TransportTCP
	return rtspclient.PullerConfig{
		URL:        url,
		Client:     rtspclient.Config{Transport: transport, UDPTimeout: time.Second, ReadTimeout: 3 * time.Second},
		MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second,
		OnTracks: func(ts []*media.Track) { l.mu.Lock(); l.tracks = append(l.tracks, ts); l.mu.Unlock() },
		OnFrame:  func(f *media.Frame) { l.mu.Lock(); l.frames = append(l.frames, f); l.mu.Unlock() },
		OnState: func(s rtspclient.PullerState, err error) {
			l.mu.Lock()
			l.states = append(l.states, s)
			if err != nil {
				l.lastErrs = append(l.lastErrs, err)
			}
			l.mu.Unlock()
		},
	}
}

func (l *frameLog) count(kind media.Kind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, f := range l.frames {
		if f.Track.Kind() == kind {
			n++
		}
	}
	return n
}

// videoEverySecond fails unless at least 10 video frames (of 25 a second)
// arrive in each of the next seconds; after names the moment they follow.
func (l *frameLog) videoEverySecond(t *testing.T, seconds int, after string) {
	t.Helper()
	for i := 0; i < seconds; i++ {
		before := l.count(media.KindVideo)
		time.Sleep(time.Second)
		if got := l.count(media.KindVideo) - before; got < 10 {
			l.mu.Lock()
			errs := l.lastErrs
			l.mu.Unlock()
			t.Fatalf("second %d%s: %d video frames; errors %v", i, after, got, errs)
		}
	}
}

// runPuller runs a Puller of cfg until the test ends.
func runPuller(t *testing.T, cfg rtspclient.PullerConfig) *rtspclient.Puller {
	t.Helper()
	p, err := rtspclient.NewPuller(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// check verifies the frames of one session: the codecs, keyframes with
// parameter sets, video at 25 fps with monotonic DTS never after PTS,
// audio present, and (through ffprobe) that the video decodes as the
// expected codec and size.
func (l *frameLog) check(t *testing.T, video, audio media.Codec, seconds float64) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.tracks) == 0 {
		t.Fatal("OnTracks never called")
	}
	var vframes, aframes []*media.Frame
	for _, f := range l.frames {
		if f.Track.Kind() == media.KindVideo {
			vframes = append(vframes, f)
		} else {
			aframes = append(aframes, f)
		}
	}
	if len(vframes) == 0 {
		t.Fatal("no video frames")
	}
	if vframes[0].Track.Codec != video || !vframes[0].Keyframe || !vframes[0].Track.Ready() {
		t.Fatalf("%d video frames; first %+v", len(vframes), vframes[0])
	}
	// Over UDP a starved receiver loses packets (a 2-core machine running
	// the whole suite), and the puller rightly drops the frames they
	// broke; TCP loses nothing.
	want, least := seconds*25, 0.85
	if l.udp {
		least = 0.5
	}
	if n := float64(len(vframes)); n < want*least || n > want*1.1 {
		t.Errorf("%d video frames in %.0f s, want about %.0f", len(vframes), seconds, want)
	}
	keys := 0
	for i, f := range vframes {
		if f.Keyframe {
			keys++
		}
		if f.DTS > f.PTS {
			t.Errorf("video frame %d: DTS %v after PTS %v", i, f.DTS, f.PTS)
		}
		if i > 0 && f.DTS <= vframes[i-1].DTS {
			t.Errorf("video frame %d: DTS %v not after %v", i, f.DTS, vframes[i-1].DTS)
		}
	}
	span := vframes[len(vframes)-1].DTS - vframes[0].DTS
	if per := span / time.Duration(len(vframes)-1); per < 36*time.Millisecond || per > 44*time.Millisecond {
		t.Errorf("video frames %v apart, want 40ms", per)
	}
	if keys < int(seconds)-1 {
		t.Errorf("%d keyframes in %.0f s (one a second expected)", keys, seconds)
	}
	if len(aframes) == 0 || aframes[0].Track.Codec != audio {
		t.Fatalf("%d audio frames", len(aframes))
	}
	for i := 1; i < len(aframes); i++ {
		if aframes[i].PTS <= aframes[i-1].PTS {
			t.Fatalf("audio frame %d: PTS %v not after %v", i, aframes[i].PTS, aframes[i-1].PTS)
		}
	}
	// Audio and video share the origin: their first frames are close.
	if d := aframes[0].PTS - vframes[0].PTS; d > time.Second || d < -time.Second {
		t.Errorf("audio starts %v from video", d)
	}
	// The elementary stream decodes as what it claims to be.
	path := filepath.Join(t.TempDir(), "video."+strings.ToLower(string(video)))
	var es bytes.Buffer
	for _, f := range vframes {
		for _, n := range f.NALUs {
			es.Write([]byte{0, 0, 0, 1})
			es.Write(n)
		}
	}
	if err := os.WriteFile(path, es.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	format := map[media.Codec]string{media.CodecH264: "h264", media.CodecH265: "hevc"}[video]
	streams := probeFormat(t, path, format)
	v := streams["video"]
	if v == nil || v.CodecName != format || v.Width != 320 || v.Height != 240 || v.Packets < len(vframes)-2 {
		t.Errorf("ffprobe of the pulled video: %+v (%d frames pulled)", v, len(vframes))
	}
	t.Logf("%d video frames (%d keyframes), %d audio frames", len(vframes), keys, len(aframes))
}

// The Puller pulls from GStreamer's RTSP server over TCP, over UDP, with
// Digest and Basic auth, H.264 with and without B-frames, H.265, G.711.
func TestPullerFromGStreamer(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	tests := []struct {
		name      string
		mount     string
		transport rtspclient.TransportMode
		auth      []string
		userinfo  string
		video     media.Codec
		audio     media.Codec
	}{
		{"H.264 over TCP", "h264", rtspclient.TransportTCP, nil, "", media.CodecH264, media.CodecAAC},
		{"H.264 over UDP", "h264", rtspclient.TransportUDP, nil, "", media.CodecH264, media.CodecAAC},
		{"H.264 with B-frames", "h264b", rtspclient.TransportTCP, nil, "", media.CodecH264, media.CodecAAC},
		{"H.265 over UDP", "h265", rtspclient.TransportUDP, nil, "", media.CodecH265, media.CodecAAC},
		{"G.711 A-law", "pcma", rtspclient.TransportTCP, nil, "", media.CodecH264, media.CodecPCMA},
		{"Digest auth", "h264", rtspclient.TransportAuto, []string{"--user", "cam", "--password", "s3cret", "--auth", "digest"}, "cam:s3cret", media.CodecH264, media.CodecAAC},
		{"Basic auth", "h264", rtspclient.TransportTCP, []string{"--user", "cam", "--password", "s3cret", "--auth", "basic"}, "cam:s3cret", media.CodecH264, media.CodecAAC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGStreamer(t, tt.auth...)
			var log frameLog
			cfg := log.config(g.url(tt.userinfo, tt.mount), tt.transport)
			cfg.Client.AllowBasicAuth = tt.name == "Basic auth"
			p, err := rtspclient.NewPuller(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The camera may take a while to start on a loaded machine: the
			// puller runs until frames have flowed for 4 s.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { p.Run(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })
			testkit.Eventually(t, 30*time.Second, "frames", func() bool { return log.count(media.KindVideo) > 0 })
			time.Sleep(4 * time.Second)
			cancel()
			<-done
			log.mu.Lock()
			first := log.frames
			log.mu.Unlock()
			if len(first) == 0 {
				t.Fatalf("no frames; errors %v", log.lastErrs)
			}
			seconds := (first[len(first)-1].PTS - first[0].PTS).Seconds()
			log.check(t, tt.video, tt.audio, seconds)
			st := p.Status()
			if st.State != rtspclient.PullerStopped || st.Attempts != 1 || st.Frames == 0 {
				t.Errorf("status %+v", st)
			}
			if tt.transport == rtspclient.TransportAuto && st.Transport != rtspclient.TransportUDP {
				t.Errorf("auto transport used %s", st.Transport)
			}
		})
	}
}

// Refused credentials: a wrong password is reported as the 401 and the
// Puller keeps retrying; a server that asks only for Basic over plain
// rtsp:// gets no password unless the source opted in, and the Puller says
// why.
func TestPullerRefusedCredentials(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	for _, tc := range []struct {
		name, auth, userinfo string
		want                 error
	}{
		{"wrong password", "digest", "cam:wrong", rtsp.ErrUnauthorized},
		{"Basic over plain rtsp", "basic", "cam:s3cret", rtsp.ErrBasicRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGStreamer(t, "--user", "cam", "--password", "s3cret", "--auth", tc.auth)
			var log frameLog
			p, _ := rtspclient.NewPuller(log.config(g.url(tc.userinfo, "h264"), rtspclient.TransportTCP))
			runFor(1500*time.Millisecond, func(ctx context.Context) { p.Run(ctx) })
			log.mu.Lock()
			defer log.mu.Unlock()
			if len(log.frames) != 0 || len(log.lastErrs) == 0 || !errors.Is(log.lastErrs[0], tc.want) {
				t.Fatalf("frames %d, errors %v", len(log.frames), log.lastErrs)
			}
			if st := p.Status(); st.Attempts < 2 || !strings.Contains(st.LastError, "401") && !errors.Is(tc.want, rtsp.ErrBasicRefused) {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// A server that refuses UDP (461) and a network that drops UDP both end
// with the Puller on TCP.
func TestPullerFallsBackToTCP(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	t.Run("461 Unsupported Transport", func(t *testing.T) {
		var log frameLog
		p, _ := rtspclient.NewPuller(log.config(g.url("", "tcponly"), rtspclient.TransportAuto))
		runFor(8*time.Second, func(ctx context.Context) {
			go func() {
				testkit.Eventually(t, 7*time.Second, "frames over TCP", func() bool { return log.count(media.KindVideo) > 25 })
				time.Sleep(100 * time.Millisecond)
			}()
			p.Run(ctx)
		})
		if st := p.Status(); st.Transport != rtspclient.TransportTCP || st.Frames == 0 || st.Attempts < 2 {
			t.Fatalf("status %+v", st)
		}
	})
	t.Run("UDP gets nothing", func(t *testing.T) {
		proxy := startUDPBreakingProxy(t, g.Port)
		var log frameLog
		p, _ := rtspclient.NewPuller(log.config("rtsp://"+proxy+"/h264", rtspclient.TransportAuto))
		start := time.Now()
		var firstFrame time.Time
		cfg := log.config("rtsp://"+proxy+"/h264", rtspclient.TransportAuto)
		cfg.OnFrame = func(f *media.Frame) {
			log.mu.Lock()
			if firstFrame.IsZero() {
				firstFrame = time.Now()
			}
			log.frames = append(log.frames, f)
			log.mu.Unlock()
		}
		p, _ = rtspclient.NewPuller(cfg)
		runFor(6*time.Second, func(ctx context.Context) { p.Run(ctx) })
		st := p.Status()
		if st.Transport != rtspclient.TransportTCP || st.Frames < 25 || st.Attempts != 2 {
			t.Fatalf("status %+v", st)
		}
		if d := firstFrame.Sub(start); d < time.Second || d > 4*time.Second {
			t.Errorf("first frame after %v; want after the 1 s UDP timeout", d)
		}
	})
}

// The source goes away and comes back: the Puller backs off, reconnects
// and frames resume.
func TestPullerReconnects(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	var log frameLog
	p := runPuller(t, log.config(g.url("", "h264"), rtspclient.TransportTCP))
	testkit.Eventually(t, 10*time.Second, "frames", func() bool { return log.count(media.KindVideo) > 10 })
	g.stop()
	testkit.Eventually(t, 10*time.Second, "the Puller to notice", func() bool { return p.Status().State == rtspclient.PullerWaiting })
	before := log.count(media.KindVideo)
	time.Sleep(1500 * time.Millisecond) // a few failed attempts against a closed port
	if st := p.Status(); st.Attempts < 3 {
		t.Errorf("only %d attempts while the source was away", st.Attempts)
	}
	g.start()
	testkit.Eventually(t, 15*time.Second, "frames after the source returned", func() bool { return log.count(media.KindVideo) > before+25 })
	log.mu.Lock()
	sessions := len(log.tracks)
	log.mu.Unlock()
	if sessions < 2 {
		t.Errorf("OnTracks called %d times", sessions)
	}
	if st := p.Status(); st.State != rtspclient.PullerPlaying {
		t.Errorf("state %s", st.State)
	}
}

// startUDPBreakingProxy forwards RTSP to GStreamer but rewrites the
// client ports in SETUP to ones nobody listens on: a network where UDP
// does not get through, as behind a strict firewall.
func startUDPBreakingProxy(t *testing.T, port int) string {
	t.Helper()
	re := regexp.MustCompile(`client_port=\d+-\d+`)
	return startRequestRewritingProxy(t, port, func(req []byte) []byte { return re.ReplaceAll(req, []byte("client_port=9-10")) })
}

// startRequestRewritingProxy forwards RTSP to GStreamer's port, passing
// each request through rewrite; the answers and interleaved data come
// back as they are.
func startRequestRewritingProxy(t *testing.T, port int, rewrite func(req []byte) []byte) string {
	t.Helper()
	return serveTCP(t, func(c net.Conn) {
		up, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return
		}
		defer up.Close()
		go io.Copy(c, up)
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			// Requests arrive whole on loopback; rewrite in place.
			if _, err := up.Write(rewrite(buf[:n])); err != nil {
				return
			}
		}
	})
}

// A server that redirects DESCRIBE elsewhere (a load balancer in front of
// GStreamer on another port of the same host): the Puller follows it,
// credentials included; to another host they would not go along.
func TestPullerFollowsRedirect(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t, "--user", "cam", "--password", "s3cret")
	addr := serveTCP(t, func(c net.Conn) {
		r, w := rtsp.NewMessageReader(c), bufio.NewWriter(c)
		var m rtsp.Message
		for r.Read(&m) == nil {
			resp := &rtsp.Response{StatusCode: rtsp.StatusOK, Header: rtsp.Header{{Name: "CSeq", Value: m.Request.Header.Get("CSeq")}}}
			if m.Request.Method == rtsp.MethodDescribe {
				resp.StatusCode, resp.Reason = 302, "Moved Temporarily"
				resp.Header.Add("Location", g.url("", "h264"))
			}
			resp.Write(w)
			w.Flush()
		}
	})
	var log frameLog
	p, _ := rtspclient.NewPuller(log.config("rtsp://cam:s3cret@"+addr+"/lb", rtspclient.TransportTCP))
	runFor(4*time.Second, func(ctx context.Context) { p.Run(ctx) })
	if n := log.count(media.KindVideo); n < 25 {
		t.Fatalf("%d frames through the redirect; errors %v", n, log.lastErrs)
	}
}

// startFilteringProxy forwards RTSP over TCP to upstream (GStreamer) and
// passes each interleaved packet only if pass says so, given its channel;
// the RTSP answers always pass.
func startFilteringProxy(t *testing.T, upstream string, pass func(channel byte) bool) string {
	t.Helper()
	return serveTCP(t, func(c net.Conn) {
		up, err := net.Dial("tcp", upstream)
		if err != nil {
			return
		}
		defer up.Close()
		go io.Copy(up, c)
		r := bufio.NewReader(up)
		for {
			b, err := r.Peek(1)
			if err != nil {
				return
			}
			var msg []byte
			if b[0] == '$' {
				head := make([]byte, 4)
				if _, err := io.ReadFull(r, head); err != nil {
					return
				}
				msg = make([]byte, 4+(int(head[2])<<8|int(head[3])))
				copy(msg, head)
				if _, err := io.ReadFull(r, msg[4:]); err != nil {
					return
				}
				if !pass(head[1]) {
					continue
				}
			} else {
				length := 0
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					msg = append(msg, line...)
					if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
						fmt.Sscan(strings.TrimSpace(v), &length)
					}
					if strings.TrimSpace(line) == "" {
						break
					}
				}
				body := make([]byte, length)
				if _, err := io.ReadFull(r, body); err != nil {
					return
				}
				msg = append(msg, body...)
			}
			if _, err := c.Write(msg); err != nil {
				return
			}
		}
	})
}

// Single video packets lost here and there (every 37th, so each position in
// an access unit is hit: a fragment's start, middle and end, the parameter
// sets, a whole slice): each costs at most its access unit, and video
// keeps coming in every second.
func TestPullerVideoSurvivesSingleLosses(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	u, err := url.Parse(g.url("", "h264"))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	addr := startFilteringProxy(t, u.Host, func(ch byte) bool { return ch != 0 || n.Add(1)%37 != 0 })
	var log frameLog
	runPuller(t, log.config("rtsp://"+addr+u.Path, rtspclient.TransportTCP))
	testkit.Eventually(t, 10*time.Second, "frames", func() bool { return log.count(media.KindVideo) > 10 })
	log.videoEverySecond(t, 10, "")
}

// The video of a source stops while its audio goes on: the session's
// packet watch stays content, so the client watches each video track's
// frames and ends the session with ErrTrackStalled (saying what the
// depacketiser saw); the Puller reconnects and video comes back.
func TestPullerEndsSessionWhoseVideoStalls(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	u, err := url.Parse(g.url("", "h264"))
	if err != nil {
		t.Fatal(err)
	}
	var cut atomic.Int32
	cut.Store(-1)
	addr := startFilteringProxy(t, u.Host, func(ch byte) bool { return int32(ch) != cut.Load() })
	var log frameLog
	runPuller(t, log.config("rtsp://"+addr+u.Path, rtspclient.TransportTCP))
	testkit.Eventually(t, 10*time.Second, "frames", func() bool { return log.count(media.KindVideo) > 10 && log.count(media.KindAudio) > 10 })
	log.mu.Lock()
	video := -1
	for i, tr := range log.tracks[0] {
		if tr.Kind() == media.KindVideo {
			video = i
		}
	}
	log.mu.Unlock()
	if video < 0 {
		t.Fatal("no video track")
	}
	// The client asks for channels 2i and 2i+1 and GStreamer keeps them.
	cut.Store(int32(2 * video))
	audioAtCut := log.count(media.KindAudio)
	var stalled error
	testkit.Eventually(t, 10*time.Second, "the session to end", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, err := range log.lastErrs {
			if errors.Is(err, rtsp.ErrTrackStalled) {
				stalled = err
			}
		}
		return stalled != nil
	})
	// The proxy drops the video: nothing decoded since the last frame, and
	// nothing received either.
	if !strings.Contains(stalled.Error(), " 0 packets decoded since its last frame") || !strings.Contains(stalled.Error(), "lost ") {
		t.Errorf("the error does not say what the track received: %v", stalled)
	}
	if log.count(media.KindAudio) < audioAtCut+25 {
		t.Errorf("audio stopped too: %d frames after the cut", log.count(media.KindAudio)-audioAtCut)
	}
	cut.Store(-1)
	before := log.count(media.KindVideo)
	testkit.Eventually(t, 15*time.Second, "video after the reconnection", func() bool { return log.count(media.KindVideo) > before+25 })
}

// startUDPProxy forwards RTSP to GStreamer and puts itself in the UDP
// path: each SETUP's client ports are replaced by a pair of its own, and
// each RTP packet GStreamer sends there is handed to pass, with the track's
// index and the packet's number on it, which may rewrite it and says
// whether to pass it on to the client's ports.
func startUDPProxy(t *testing.T, port int, pass func(track int, n int64, pkt []byte) bool) string {
	t.Helper()
	re := regexp.MustCompile(`client_port=(\d+)-(\d+)`)
	var mu sync.Mutex
	tracks := 0
	relay := func(track int, to int, rtp bool) int {
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		out := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: to}
		go func() {
			buf := make([]byte, 65536)
			var n int64
			for {
				k, _, err := pc.ReadFromUDP(buf)
				if err != nil {
					return
				}
				if rtp {
					n++
					if !pass(track, n, buf[:k]) {
						continue
					}
				}
				pc.WriteToUDP(buf[:k], out)
			}
		}()
		return pc.LocalAddr().(*net.UDPAddr).Port
	}
	return startRequestRewritingProxy(t, port, func(req []byte) []byte {
		return re.ReplaceAllFunc(req, func(m []byte) []byte {
			var a, b int
			fmt.Sscanf(string(m), "client_port=%d-%d", &a, &b)
			mu.Lock()
			track := tracks
			tracks++
			mu.Unlock()
			return fmt.Appendf(nil, "client_port=%d-%d", relay(track, a, true), relay(track, b, false))
		})
	})
}

// Over UDP, single video packets lost here and there (every 37th) cost at
// most their access units, through the reorder buffer: video keeps coming
// in every second.
func TestPullerVideoSurvivesSingleLossesOverUDP(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	addr := startUDPProxy(t, g.Port, func(track int, n int64, _ []byte) bool { return track != 0 || n%37 != 0 })
	var log frameLog
	p := runPuller(t, log.config("rtsp://"+addr+"/h264", rtspclient.TransportUDP))
	testkit.Eventually(t, 10*time.Second, "frames", func() bool { return log.count(media.KindVideo) > 10 })
	log.videoEverySecond(t, 10, "")
	if st := p.Status(); st.Transport != rtspclient.TransportUDP || st.Attempts != 1 {
		t.Errorf("the session did not stay on UDP: %+v", st)
	}
}

// The source's video sequence numbers restart 300 lower in the middle of
// the session (a payloader reset): the reorder buffer and the
// depacketiser take the run of "old" numbers as a restart within a few
// packets, instead of discarding every packet as late until the numbers
// catch up (six seconds here).
func TestPullerFollowsSequenceRestartedLower(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	var restartAt atomic.Int64
	addr := startUDPProxy(t, g.Port, func(track int, n int64, pkt []byte) bool {
		if at := restartAt.Load(); track == 0 && at > 0 && n >= at && len(pkt) >= 12 {
			binary.BigEndian.PutUint16(pkt[2:], binary.BigEndian.Uint16(pkt[2:])-300)
		}
		return true
	})
	var log frameLog
	p := runPuller(t, log.config("rtsp://"+addr+"/h264", rtspclient.TransportUDP))
	testkit.Eventually(t, 10*time.Second, "frames", func() bool { return log.count(media.KindVideo) > 25 })
	restartAt.Store(1) // from the next packet on
	log.videoEverySecond(t, 4, " after the restart")
	if st := p.Status(); st.Attempts != 1 {
		t.Errorf("the session was not kept: %+v", st)
	}
}
