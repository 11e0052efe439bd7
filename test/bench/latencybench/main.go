// Command latencybench measures how long the media engine takes from an
// RTP packet's arrival to the matching HTTP-FLV tag, and how long a new
// HTTP-FLV player waits for its first frame.
//
// `svc engine` runs as its own process. This program publishes the
// built-in demo clip (640x360 25 fps H.264 + AAC) into the engine's RTSP
// server in real time, over TCP interleaved or over UDP, with its own
// small RTSP publisher, and plays it over HTTP-FLV. Each video access unit
// carries an SEI (user data unregistered) with a counter, so every FLV tag
// is matched to the frame it came from; the latency of a frame is the time
// from the return of the write of its last RTP packet (the packet that
// completes it, so the earliest the engine can publish it) to the arrival
// of its tag at the player: it includes two loopback hops on top of the
// engine. The engine's own frame-to-wire figure (hub arrival to the
// writev that carried the tag, from its statistics) is reported beside
// it. Time to first frame is from a new player's connect to its first
// video tag (from the GOP cache). It writes its section of
// docs/benchmarks.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/flv"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/bench/rtsppub"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	window := flag.Duration("window", 15*time.Second, "measured publishing time per case")
	readers := flag.String("readers", "0,50,200", "other HTTP-FLV players per case (each case is run over TCP and UDP)")
	playersURL := flag.String("players-url", "", "run as the other players' process: play this URL")
	players := flag.Int("players", 0, "with -players-url: how many players")
	flag.Parse()
	if *playersURL != "" {
		runPlayers(*playersURL, *players)
		return
	}
	var extra []int
	for _, f := range strings.Split(*readers, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= 0 {
			extra = append(extra, n)
		}
	}
	if err := run(*out, *window, extra); err != nil {
		fmt.Fprintln(os.Stderr, "latencybench:", err)
		os.Exit(1)
	}
}

// result is one case's measurements.
type result struct {
	transport  string
	others     int
	frames     int       // video frames sent in the window
	matched    int       // of them, tags the player received
	rtpToFLV   []float64 // ms, sorted
	ttff       []float64 // ms, sorted
	frameWire  engineapi.Latency
	engineDrop uint64
}

func run(outPath string, window time.Duration, extra []int) error {
	dir, err := os.MkdirTemp("", "latencybench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	svc := filepath.Join(dir, "svc")
	if out, err := exec.Command("go", "build", "-o", svc, "./cmd/svc").CombinedOutput(); err != nil {
		return fmt.Errorf("building svc (run from the repository root): %w\n%s", err, out)
	}
	clip, err := filesource.LoadFile(filesource.Builtin)
	if err != nil {
		return err
	}
	var results []result
	for _, others := range extra {
		for _, transport := range []string{"tcp", "udp"} {
			fmt.Fprintf(os.Stderr, "== RTSP publish over %s, %d other players\n", transport, others)
			r, err := measure(svc, filepath.Join(dir, transport+strconv.Itoa(others)), clip, transport, others, window)
			if err != nil {
				return fmt.Errorf("%s with %d players: %w", transport, others, err)
			}
			results = append(results, r)
		}
	}
	cmd := "go run ./test/bench/latencybench -window " + window.String() + " -readers " + joinInts(extra)
	return benchdoc.WriteSection(outPath, "latencybench", report(cmd, window, clip, results))
}

// measure runs one case against a fresh engine.
func measure(svc, dir string, clip *filesource.Clip, transport string, others int, window time.Duration) (result, error) {
	res := result{transport: transport, others: others}
	eng, err := startEngine(svc, dir)
	if err != nil {
		return res, err
	}
	defer eng.stop()
	pub, err := rtsppub.Publish(eng.rtsp, "bench/live", clip.Tracks, transport == "udp")
	if err != nil {
		return res, fmt.Errorf("publish: %w", err)
	}
	defer pub.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent := newStamps()
	var count atomic.Int64
	pubDone := make(chan error, 1)
	go func() { pubDone <- play(ctx, pub, clip, sent, &count) }()

	flvURL := "http://" + eng.media + "/bench/live.live.flv"
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if others > 0 {
		stop, err := startPlayers(flvURL, others)
		if err != nil {
			return res, err
		}
		defer stop()
	}
	received := newStamps()
	wg.Add(1)
	go func() { defer wg.Done(); watch(ctx, flvURL, received) }()

	time.Sleep(3 * time.Second) // the stream starts and every player is on it
	from := count.Load()
	deadline := time.Now().Add(window)
	for time.Now().Before(deadline) {
		ms, err := firstFrame(ctx, flvURL)
		if err != nil {
			return res, fmt.Errorf("time to first frame: %w", err)
		}
		res.ttff = append(res.ttff, ms)
		time.Sleep(250 * time.Millisecond)
	}
	to := count.Load()
	time.Sleep(500 * time.Millisecond) // the window's last tags arrive
	select {
	case err := <-pubDone:
		return res, fmt.Errorf("publisher stopped: %w", err)
	default:
	}
	for k := from; k < to; k++ {
		res.frames++
		s, ok1 := sent.get(k)
		r, ok2 := received.get(k)
		if ok1 && ok2 {
			res.matched++
			res.rtpToFLV = append(res.rtpToFLV, float64(r-s)/1e6)
		}
	}
	slices.Sort(res.rtpToFLV)
	slices.Sort(res.ttff)
	st, err := eng.stats()
	if err != nil {
		return res, err
	}
	res.frameWire, res.engineDrop = st.FrameToWire, st.DroppedFrames
	if res.frames == 0 || res.matched < res.frames*99/100 {
		return res, fmt.Errorf("the player got %d of %d frames", res.matched, res.frames)
	}
	fmt.Fprintf(os.Stderr, "   %d frames, RTP->FLV p50 %.2f p99 %.2f ms; TTFF p50 %.1f ms\n", res.matched, pct(res.rtpToFLV, 0.5), pct(res.rtpToFLV, 0.99), pct(res.ttff, 0.5))
	return res, nil
}

// epoch is the monotonic origin of the stamps.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// stamps maps a frame counter to an instant (nanoseconds since epoch).
type stamps struct {
	mu sync.Mutex
	at map[int64]int64
}

func newStamps() *stamps { return &stamps{at: map[int64]int64{}} }

func (s *stamps) set(k, t int64) {
	s.mu.Lock()
	if _, ok := s.at[k]; !ok {
		s.at[k] = t
	}
	s.mu.Unlock()
}

func (s *stamps) get(k int64) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[k]
	return t, ok
}

// seiUUID marks the benchmark's SEI; it has no zero bytes, and the counter
// is written 7 bits a byte with the top bit set, so no emulation
// prevention is ever needed.
var seiUUID = []byte("svc-latencybench")

func seiNALU(k int64) []byte {
	b := []byte{0x06, 0x05, byte(len(seiUUID) + 4)}
	b = append(b, seiUUID...)
	for shift := 21; shift >= 0; shift -= 7 {
		b = append(b, 0x80|byte(k>>uint(shift))&0x7f)
	}
	return append(b, 0x80) // rbsp trailing bits
}

// seiCounter finds the benchmark's SEI in an AVC video tag's body.
func seiCounter(tag []byte) (int64, bool) {
	if len(tag) < 5 {
		return 0, false
	}
	b := tag[5:]
	for len(b) >= 4 {
		n := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		b = b[4:]
		if n > len(b) {
			return 0, false
		}
		nalu := b[:n]
		b = b[n:]
		if len(nalu) >= 3+len(seiUUID)+4 && nalu[0]&0x1f == 6 && bytes.Equal(nalu[3:3+len(seiUUID)], seiUUID) {
			var k int64
			for _, c := range nalu[3+len(seiUUID) : 3+len(seiUUID)+4] {
				k = k<<7 | int64(c&0x7f)
			}
			return k, true
		}
	}
	return 0, false
}

// play publishes the clip in real time, looped, until ctx ends; each video
// frame gets the next counter in an SEI and its send time in sent.
func play(ctx context.Context, pub *rtsppub.Publisher, clip *filesource.Clip, sent *stamps, count *atomic.Int64) error {
	start := time.Now()
	for loop := 0; ; loop++ {
		off := time.Duration(loop) * clip.Duration
		for _, f := range clip.Frames {
			at := start.Add(off + f.DTS)
			if d := time.Until(at); d > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(d):
				}
			}
			g := *f
			g.PTS, g.DTS = f.PTS+off, f.DTS+off
			var k int64 = -1
			if f.Track.Kind() == media.KindVideo {
				k = count.Load()
				g.NALUs = withSEI(f.NALUs, seiNALU(k))
			}
			if err := pub.Send(f.Track.ID, &g); err != nil {
				return err
			}
			if k >= 0 {
				sent.set(k, now())
				count.Add(1)
			}
		}
	}
}

// withSEI puts sei before the access unit's first slice.
func withSEI(nalus [][]byte, sei []byte) [][]byte {
	out := make([][]byte, 0, len(nalus)+1)
	done := false
	for _, n := range nalus {
		if t := n[0] & 0x1f; !done && t >= 1 && t <= 5 {
			out, done = append(out, sei), true
		}
		out = append(out, n)
	}
	return out
}

// watch plays the stream and stamps each video tag's arrival by its
// counter.
func watch(ctx context.Context, url string, received *stamps) {
	resp, err := get(ctx, url)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	r := flv.NewReader(resp.Body)
	for {
		tag, err := r.Next()
		if err != nil {
			return
		}
		if tag.Type != flv.TagVideo {
			continue
		}
		if k, ok := seiCounter(tag.Data); ok {
			received.set(k, now())
		}
	}
}

// startPlayers runs the other players in a child process (this program
// with -players-url), so their reading does not share this process's
// scheduler and garbage collector with the measured player; stop ends it.
func startPlayers(url string, n int) (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, self, "-players-url", url, "-players", strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); cmd.Wait() }, nil
}

// runPlayers is the other players' process: n players that read and
// discard until it is killed.
func runPlayers(url string, n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := get(context.Background(), url)
			if err != nil {
				fmt.Fprintln(os.Stderr, "latencybench players:", err)
				return
			}
			defer resp.Body.Close()
			io.Copy(io.Discard, resp.Body)
		}()
	}
	wg.Wait()
}

// firstFrame connects a new player and returns the milliseconds to its
// first video frame (not the sequence header).
func firstFrame(ctx context.Context, url string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t0 := time.Now()
	resp, err := get(ctx, url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	r := flv.NewReader(resp.Body)
	for {
		tag, err := r.Next()
		if err != nil {
			return 0, err
		}
		if tag.Type == flv.TagVideo {
			if _, seq, _ := flv.VideoInfo(tag.Data); !seq {
				return float64(time.Since(t0)) / 1e6, nil
			}
		}
	}
}

// client has no connection reuse: every player is a new connection.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, MaxConnsPerHost: 0}}

func get(ctx context.Context, url string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, nil
}

// engine is `svc engine` under measurement.
type engine struct {
	cmd                  *exec.Cmd
	media, rtsp, control string
	secret               string
	cancel               context.CancelFunc
}

func freeAddr() string { return benchdoc.FreeAddr() }

// startEngine runs `svc engine` with an RTSP server and no hooks.
func startEngine(svc, dir string) (*engine, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	e := &engine{secret: "bench-secret", media: freeAddr(), rtsp: freeAddr(), control: freeAddr()}
	secretFile := filepath.Join(dir, "control-secret")
	if err := os.WriteFile(secretFile, []byte(e.secret), 0o600); err != nil {
		return nil, err
	}
	cfg := engineapi.Defaults()
	cfg.NodeID, cfg.ControlAddr, cfg.HTTPAddr, cfg.RTSPAddr, cfg.ControlSecretFile = "bench", e.control, e.media, e.rtsp, secretFile
	cfg.RTPPortMin, cfg.RTPPortMax = udpPortRange()
	cfg.DataDir, cfg.LogLevel = dir, "error"
	b, err := cfg.Marshal()
	if err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(dir, "engine.yaml")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		return nil, err
	}
	// Stopping interrupts the engine, which shuts down in order, and kills
	// it if it has not exited 10 s later.
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.cmd = exec.CommandContext(ctx, svc, "engine", "--config", cfgFile)
	e.cmd.Cancel = func() error { return e.cmd.Process.Signal(os.Interrupt) }
	e.cmd.WaitDelay = 10 * time.Second
	e.cmd.Stderr = os.Stderr
	if err := e.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", e.rtsp); err == nil {
			c.Close()
			return e, nil
		}
		if time.Now().After(deadline) {
			e.stop()
			return nil, errors.New("the engine's RTSP server did not listen within 20 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// udpPortRange finds an even port pair free on loopback for the engine's
// RTSP-over-UDP sockets, and a range above it.
func udpPortRange() (int, int) {
	for {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			continue
		}
		port := c.LocalAddr().(*net.UDPAddr).Port &^ 1
		c.Close()
		if port > 1024 && port < 65000 {
			return port, port + 99
		}
	}
}

func (e *engine) stop() {
	e.cancel()
	e.cmd.Wait()
}

// stats reads the engine's statistics from its control API.
func (e *engine) stats() (st engineapi.Stats, err error) {
	req, _ := http.NewRequest("GET", "http://"+e.control+engineapi.PathStats, nil)
	req.Header.Set("Authorization", "Bearer "+e.secret)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		defer resp.Body.Close()
		err = json.NewDecoder(resp.Body).Decode(&st)
	}
	return st, err
}

// pct is the p-th quantile of sorted values.
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[min(len(v)-1, int(p*float64(len(v))))]
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func report(cmd string, window time.Duration, clip *filesource.Clip, results []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Media engine: RTSP publish to HTTP-FLV latency and time to first frame\n\n")
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s (shared with other work while it ran)\n- Command: `%s` (from the repository root; `make bench` runs it)\n",
		time.Now().UTC().Format("2006-01-02"), benchdoc.Machine(), cmd)
	fmt.Fprintf(&b, "- Set-up: `svc engine` as its own process; this program publishes the built-in demo clip (640x360 25 fps H.264 + AAC, %d frames "+
		"a loop) in real time into its RTSP server (ANNOUNCE/RECORD, TCP interleaved or UDP), plays it over HTTP-FLV, and during a %s window "+
		"connects a new HTTP-FLV player every 250 ms for the time to first frame. Other players, when there are any, read and discard "+
		"in a child process.\n",
		len(clip.Frames), window)
	fmt.Fprintf(&b, "- RTP -> FLV: from the return of the write of a video frame's last RTP packet to the arrival of its FLV tag at the player "+
		"(matched by a counter in an SEI the publisher adds), so two loopback hops are included. Engine frame-to-wire: hub arrival to the "+
		"writev that carried the tag, from the engine's statistics (every player's tags).\n\n")
	fmt.Fprintf(
		&b,
		"| publish over | other players | video frames | RTP -> FLV p50 / p99 / max | target p99 < 2 ms | engine frame-to-wire p50 / p99 | time "+
			"to first frame p50 / p99 / max (players) | target < 50 ms | engine drops |\n",
	)
	fmt.Fprintf(&b, "|---|--:|--:|--:|---|--:|--:|---|--:|\n")
	for _, r := range results {
		p99, ttff := pct(r.rtpToFLV, 0.99), pct(r.ttff, 0.99)
		fmt.Fprintf(&b, "| %s | %d | %d/%d | %.2f / %.2f / %.2f ms | %s | %.2f / %.2f ms | %.1f / %.1f / %.1f ms (%d) | %s | %d |\n",
			strings.ToUpper(r.transport), r.others, r.matched, r.frames, pct(r.rtpToFLV, 0.5), p99, r.rtpToFLV[len(r.rtpToFLV)-1],
			benchdoc.Verdict(p99 < 2), r.frameWire.P50Ms, r.frameWire.P99Ms, pct(r.ttff, 0.5), ttff, r.ttff[len(r.ttff)-1], len(r.ttff),
			benchdoc.Verdict(ttff < 50), r.engineDrop)
	}
	b.WriteString("\n")
	return b.String()
}
