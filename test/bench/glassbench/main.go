// Command glassbench measures glass-to-glass latency: from the moment a
// frame is made to the moment a player shows it, for WHEP in headless
// Chromium and, for comparison, for HTTP-FLV decoded by ffmpeg.
//
// `svc engine` runs as its own process. This program draws 640x360 frames
// at 25 fps, each with the wall-clock time at which it was drawn burned
// in as 32 black and white blocks (Unix milliseconds, low 32 bits; each
// row of blocks is followed by its complement, so a damaged read is
// recognised), and pipes them to ffmpeg, which encodes them with x264
// (ultrafast, zerolatency, no B-frames) and publishes them over RTSP into
// the engine, as a camera's stream arrives. Chromium plays the stream over
// WHEP; for every frame it presents (requestVideoFrameCallback) it draws
// the picture to a canvas, reads the blocks and subtracts them from the
// frame's display time. The same stream is then played over HTTP-FLV by
// ffmpeg, whose decoded frames are read the same way. Both clocks are the
// machine's, so no synchronisation is involved. It writes its section of
// docs/benchmarks.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/glass"
	"github.com/svcplatform/svc/test/peers/chromium"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	window := flag.Duration("window", 20*time.Second, "measured playing time per protocol")
	flag.Parse()
	if err := run(*out, *window); err != nil {
		fmt.Fprintln(os.Stderr, "glassbench:", err)
		os.Exit(1)
	}
}

// result is one protocol's measurement.
type result struct {
	protocol, player string
	latency          []float64 // ms, sorted
	unreadable, seen int
	note             string
}

func run(outPath string, window time.Duration) error {
	dir, err := os.MkdirTemp("", "glassbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	svc := filepath.Join(dir, "svc")
	if out, err := exec.Command("go", "build", "-o", svc, "./cmd/svc").CombinedOutput(); err != nil {
		return fmt.Errorf("building svc (run from the repository root): %w\n%s", err, out)
	}
	eng, err := startEngine(svc, dir)
	if err != nil {
		return err
	}
	defer benchdoc.Stop(eng.cmd)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srcDone := make(chan error, 1)
	go func() {
		srcDone <- glass.Publish(ctx, "rtsp://"+eng.rtsp+"/live/glass", func(s string) { fmt.Fprint(os.Stderr, s) })
	}()
	if err := eng.waitReady(ctx, "live", "glass", 30*time.Second, srcDone); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "== WHEP in headless Chromium")
	whep, err := playWHEP(ctx, "http://"+eng.media+"/live/glass/whep", dir, window)
	if err != nil {
		return fmt.Errorf("WHEP: %w", err)
	}
	fmt.Fprintln(os.Stderr, "== HTTP-FLV decoded by ffmpeg")
	flv, err := playFLV(ctx, "http://"+eng.media+"/live/glass.live.flv", window)
	if err != nil {
		return fmt.Errorf("HTTP-FLV: %w", err)
	}
	select {
	case err := <-srcDone:
		return fmt.Errorf("the source stopped during the measurement: %w", err)
	default:
	}
	results := []result{whep, flv}
	load := loadAverage()
	for _, r := range results {
		fmt.Fprintf(os.Stderr, "   %s: %d frames, p50 %.0f p95 %.0f p99 %.0f max %.0f ms; %d unreadable\n", r.protocol, len(r.latency),
			pct(r.latency, 0.5), pct(r.latency, 0.95), pct(r.latency, 0.99), pct(r.latency, 1), r.unreadable)
	}
	cmd := "go run ./test/bench/glassbench -window " + window.String()
	return benchdoc.WriteSection(outPath, "glassbench", report(cmd, window, load, results))
}

// loadAverage is the machine's one-minute load average, which the
// players' jitter (and so the WebRTC jitter buffer) follows.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// playWHEP serves the page, runs Chromium on it and waits for its report.
func playWHEP(ctx context.Context, whep, dir string, window time.Duration) (result, error) {
	const warmup = 3 * time.Second
	reports := make(chan glass.Report, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, glass.Page)
	})
	mux.HandleFunc("POST /report", func(w http.ResponseWriter, r *http.Request) {
		var rep glass.Report
		if err := json.NewDecoder(r.Body).Decode(&rep); err != nil {
			rep.Error = "undecodable report: " + err.Error()
		}
		select {
		case reports <- rep:
		default:
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	pageURL := fmt.Sprintf("http://%s/?whep=%s&warmup=%d&window=%d", ln.Addr(), url.QueryEscape(whep), warmup.Milliseconds(), window.Milliseconds())
	browser := exec.CommandContext(ctx, chromium.Path, chromium.Args(filepath.Join(dir, "chromium"), pageURL, chromium.WebRTCFlags...)...)
	var output strings.Builder
	browser.Stdout, browser.Stderr = &output, &output
	if err := browser.Start(); err != nil {
		return result{}, fmt.Errorf("chromium: %w", err)
	}
	defer benchdoc.Stop(browser)
	var rep glass.Report
	select {
	case rep = <-reports:
	case <-time.After(warmup + window + 90*time.Second):
		return result{}, fmt.Errorf("no report from Chromium: %s", output.String())
	}
	if rep.Error != "" {
		return result{}, errors.New(rep.Error)
	}
	if len(rep.Samples) < int(window.Seconds())*glass.FPS/2 {
		return result{}, fmt.Errorf("the browser read %d stamps of %d frames (%d unreadable)", len(rep.Samples), rep.Seen, rep.Bad)
	}
	slices.Sort(rep.Samples)
	return result{protocol: "WHEP", player: "headless Chromium " + chromium.Version(), latency: rep.Samples, unreadable: rep.Bad, seen: rep.Seen,
		note: fmt.Sprintf("%dx%d, %d frames decoded, %d dropped; WebRTC jitter buffer %.0f ms a frame on average", rep.Width, rep.Height,
			rep.FramesDecoded, rep.FramesDropped, rep.JitterBuffer)}, nil
}

// playFLV has ffmpeg play the HTTP-FLV stream with no buffering of its own
// and reads the stamps of the frames it decodes.
func playFLV(ctx context.Context, flvURL string, window time.Duration) (result, error) {
	const warmup = 3 * time.Second
	ctx, cancel := context.WithTimeout(ctx, warmup+window)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-fflags", "nobuffer", "-flags", "low_delay",
		"-threads", "1", "-i", flvURL, "-f", "rawvideo", "-pix_fmt", "gray", "-fps_mode", "passthrough", "pipe:1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("ffmpeg: %w", err)
	}
	defer cmd.Wait()
	r := result{protocol: "HTTP-FLV", player: "ffmpeg " + ffmpegVersion() + " (`-fflags nobuffer -flags low_delay`, one decoder thread)",
		note: "no player buffer: an MSE player (flv.js, mpegts.js) adds its own on top"}
	start := time.Now()
	frame := make([]byte, glass.Width*glass.Height)
	for {
		if _, err := io.ReadFull(out, frame); err != nil {
			break
		}
		now := time.Now()
		if now.Sub(start) < warmup {
			continue
		}
		r.seen++
		stamp, ok := glass.ReadStamp(frame)
		if !ok {
			r.unreadable++
			continue
		}
		r.latency = append(r.latency, glass.Latency(now.UnixMilli(), stamp))
	}
	if len(r.latency) < int(window.Seconds())*glass.FPS/2 {
		return r, fmt.Errorf("ffmpeg decoded %d readable frames in %s", len(r.latency), window)
	}
	slices.Sort(r.latency)
	return r, nil
}

func ffmpegVersion() string {
	out, err := exec.Command("ffmpeg", "-version").Output()
	if err != nil {
		return ""
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return ""
	}
	return f[2]
}

// engine is `svc engine` under measurement.
type engine struct {
	cmd                  *exec.Cmd
	media, rtsp, control string
}

func startEngine(svc, dir string) (*engine, error) {
	e := &engine{media: benchdoc.FreeAddr(), rtsp: benchdoc.FreeAddr(), control: benchdoc.FreeAddr()}
	secretFile := filepath.Join(dir, "control-secret")
	if err := os.WriteFile(secretFile, []byte("bench-secret"), 0o600); err != nil {
		return nil, err
	}
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	webrtcAddr := udp.LocalAddr().String()
	udp.Close()
	cfg := engineapi.Defaults()
	cfg.NodeID, cfg.ControlAddr, cfg.HTTPAddr, cfg.RTSPAddr, cfg.ControlSecretFile = "bench", e.control, e.media, e.rtsp, secretFile
	cfg.RTPPortMin, cfg.RTPPortMax = 34000, 34099
	cfg.WebRTC.UDPAddr, cfg.WebRTC.TCPAddr = webrtcAddr, ""
	cfg.DataDir, cfg.LogLevel, cfg.DemoFile, cfg.DemoPath = dir, "error", "", ""
	cfgFile, err := benchdoc.WriteEngineConfig(dir, cfg)
	if err != nil {
		return nil, err
	}
	e.cmd = exec.Command(svc, "engine", "--config", cfgFile)
	e.cmd.Stderr = os.Stderr
	if err := e.cmd.Start(); err != nil {
		return nil, err
	}
	// The source can publish once the RTSP server listens.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", e.rtsp); err == nil {
			c.Close()
			return e, nil
		}
		if time.Now().After(deadline) {
			benchdoc.Stop(e.cmd)
			return nil, errors.New("the engine's RTSP server did not listen within 30 s")
		}
	}
}

// waitReady waits for the stream to be playable.
func (e *engine) waitReady(ctx context.Context, app, stream string, within time.Duration, srcDone <-chan error) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case err := <-srcDone:
			return fmt.Errorf("the source stopped: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		var list engineapi.StreamList
		if err := e.get(engineapi.PathStreams, &list); err != nil {
			continue
		}
		for _, s := range list.Streams {
			if s.App == app && s.Stream == stream && s.Ready {
				return nil
			}
		}
	}
	return fmt.Errorf("%s/%s was not ready within %s", app, stream, within)
}

var getMu sync.Mutex

func (e *engine) get(path string, out any) error {
	getMu.Lock()
	defer getMu.Unlock()
	req, _ := http.NewRequest("GET", "http://"+e.control+path, nil)
	req.Header.Set("Authorization", "Bearer bench-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// pct is the p-th quantile of sorted values (1 is the maximum).
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[min(len(v)-1, int(p*float64(len(v))))]
}

func report(cmd string, window time.Duration, load string, results []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Glass-to-glass latency: WHEP in Chromium and HTTP-FLV\n\n")
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s (shared with other work while it ran; load average %s at the end)\n"+
		"- Command: `%s` (from the repository root; `make bench` runs it)\n",
		time.Now().UTC().Format("2006-01-02"), benchdoc.Machine(), load, cmd)
	fmt.Fprintf(&b, "- Source: this program draws %dx%d frames at %d fps with the wall-clock time of drawing burned in (32 bits of Unix "+
		"milliseconds as black and white blocks, each row followed by its complement) and pipes them to ffmpeg, which encodes them with "+
		"x264 (ultrafast, zerolatency, baseline, GOP 2 s) and publishes them over RTSP (TCP) into `svc engine` (its own process), as a "+
		"camera's stream arrives. Latency is the time a player shows a frame minus the time burned into it: it includes the x264 "+
		"encode, the RTSP hop, the engine, the player's network, jitter buffer, decoder and (in Chromium) the compositor, but not a "+
		"camera's sensor and encoder or a screen's scan-out.\n",
		glass.Width, glass.Height, glass.FPS)
	fmt.Fprintf(&b, "- WHEP: headless Chromium plays the stream (video only); for every frame it presents (`requestVideoFrameCallback`, "+
		"its expected display time) it draws the picture to a canvas and reads the blocks. HTTP-FLV: ffmpeg decodes the stream to raw "+
		"frames that this program reads at once. Each is measured for %s after 3 s of warm-up, one after the other.\n\n", window)
	fmt.Fprintf(&b, "| protocol | player | frames read (unreadable) | latency p50 / p95 / p99 / max | target (issue 19) | notes |\n")
	fmt.Fprintf(&b, "|---|---|--:|--:|---|---|\n")
	for _, r := range results {
		target := "-"
		if r.protocol == "WHEP" {
			target = "p99 < 500 ms: " + benchdoc.Verdict(pct(r.latency, 0.99) < 500)
		}
		fmt.Fprintf(&b, "| %s | %s | %d (%d) | %.0f / %.0f / %.0f / %.0f ms | %s | %s |\n", r.protocol, r.player, len(r.latency), r.unreadable,
			pct(r.latency, 0.5), pct(r.latency, 0.95), pct(r.latency, 0.99), pct(r.latency, 1), target, r.note)
	}
	b.WriteString("\n")
	return b.String()
}
