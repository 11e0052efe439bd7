// Command gbbench measures GB28181 live invites and media ingest.
//
// INVITE to first frame: a control node with its SIP server, an enrolled
// agent running its engine, and a SIPp camera (the e2e scenarios) that
// registers with digest and answers INVITEs; each round times the
// third-party live invite to the INVITE at the camera and to the stream
// Online, the camera's media (below) sent the moment its INVITE is seen.
//
// Ingest: N concurrent ~2 Mbps
// H.264+AAC MPEG program streams in RTP over UDP into one `svc engine` on
// one core (GOMAXPROCS=1 under taskset), each to its own RTP server opened
// through the engine's control API as an INVITE would (port, SSRC): the
// engine's CPU per stream, the frames that reached the hub against the
// frames sent, and RTP packets lost. In the same run the same media is
// published over RTSP (TCP interleaved) by N sessions into a fresh engine,
// for the RTSP ingest figure on the same footing.
//
// The media is encoded once by GStreamer (x264enc, avenc_aac) and muxed by
// mpegpsmux (with a PSM, as devices send) and, through a tee, by mpegtsmux
// for the RTSP side: both sides carry the same frames. This process sends
// the program stream as RTP in real time, each PES at its PTS (as a device
// sends each frame when encoded; test/peers/psrtp packs a live peer's
// output the same way), one goroutine and one socket per stream, starts
// spread over a second; it runs on the other core. It writes its section of
// docs/benchmarks.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/bench/rtsppub"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	ladder := flag.String("streams", "50,150,300", "stream counts, comma-separated")
	seconds := flag.Int("seconds", 20, "seconds of media each stream sends")
	invites := flag.Int("invites", 30, "live invites of the SIPp camera timed to the first frame (0: none)")
	quick := flag.Bool("quick", false, "one small case (20 streams, 10 s, 5 invites)")
	flag.StringVar(&engineCores, "engine-cores", engineCores, "taskset CPU list of the measured engines, comma-separated (GOMAXPROCS is their count)")
	flag.BoolVar(&withRTSP, "rtsp", true, "measure RTSP ingest of the same frames beside each PS case")
	flag.StringVar(&engineLog, "engine-log", engineLog, "log level of the measured engines")
	flag.StringVar(&svcBinary, "svc", "", "a built svc binary to measure (default: build ./cmd/svc)")
	flag.IntVar(&reg.devices, "devices", 2000, "SIPp devices registering with digest (0: none)")
	flag.IntVar(&reg.rate, "register-rate", 200, "devices starting their registration per second")
	flag.DurationVar(&reg.keepalive, "keepalive", time.Minute, "interval of the devices' keep-alives")
	flag.IntVar(&reg.rounds, "keepalives", 10, "keep-alives each device sends after registering")
	flag.StringVar(&reg.cpuProfile, "reg-cpuprofile", "", "write a CPU profile of the registration run's keep-alive phase (this process) to this file")
	flag.StringVar(&reg.registerProfile, "reg-register-cpuprofile", "", "write a CPU profile of the registration phase (this process) to this file")
	flag.StringVar(&reg.registerTrace, "reg-register-trace", "", "write an execution trace of the registration phase (this process) to this file")
	flag.Parse()
	if *quick {
		*ladder, *seconds, *invites = "20", 10, 5
		reg.devices, reg.rate, reg.keepalive, reg.rounds = 100, 50, 10*time.Second, 2
	}
	if err := run(*out, *ladder, *seconds, *invites); err != nil {
		fmt.Fprintln(os.Stderr, "gbbench:", err)
		os.Exit(1)
	}
}

// withRTSP: each PS case is followed by RTSP ingest of the same frames.
var withRTSP = true

// side is one ingest measured at one stream count.
type side struct {
	streams  int
	cpu      float64 // engine CPU seconds while the media was sent
	media    float64 // seconds of media per stream
	expected uint64  // frames sent
	hub      uint64  // frames that entered the hub
	rtpLost  uint64  // RTP packets the engine found missing (PS)
	rcvbuf   int64   // the kernel's UDP receive-queue drops meanwhile (machine-wide)
	drops    int64   // the kernel's drops at the RTP servers' sockets
	packets  int     // RTP packets sent (PS)
	live     int     // streams published in the hub
	sendCPU  float64 // this process's CPU seconds meanwhile (the PS senders)
	load     string  // the machine's load average at the end
	refused  int     // senders stopped by an RTP server that had closed
	lateMax  time.Duration
	lateOver int64 // pieces sent more than lateLimit after their time
	pieces   int64
}

func (s side) perStream() float64 { return s.cpu / (float64(s.streams) * s.media) * 100 }
func (s side) lost() int64        { return int64(s.expected) - int64(s.hub) }

// startupFrames are the AAC frames a PS stream carries before its first
// video frame is complete (with this clip's mux), which are not published.
const startupFrames = 2

func (s side) underLoad() int64 { return s.lost() - startupFrames*int64(s.streams) }

func run(outPath, ladder string, seconds, nInvites int) error {
	for _, p := range []string{"gst-launch-1.0", "taskset", "sipp"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s is required (make bench installs GStreamer; taskset is util-linux): %w", p, err)
		}
	}
	var counts []int
	for _, s := range strings.Split(ladder, ",") {
		if strings.TrimSpace(s) == "" {
			continue // -streams "": no ingest cases
		}
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c <= 0 {
			return fmt.Errorf("-streams: %q is not a count", s)
		}
		counts = append(counts, c)
	}
	dir, err := os.MkdirTemp("", "gbbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var regs regResult
	if reg.devices > 0 {
		if regs, err = registrations(filepath.Join(dir, "registrations"), reg); err != nil {
			return err
		}
		var w strings.Builder
		regs.markdown(&w)
		fmt.Print(w.String())
		if nInvites == 0 && len(counts) == 0 {
			return benchdoc.WriteSection(outPath, "gbbench", w.String())
		}
	}
	svc := svcBinary
	if svc == "" {
		svc = filepath.Join(dir, "svc")
		if out, err := exec.Command("go", "build", "-o", svc, "./cmd/svc").CombinedOutput(); err != nil {
			return fmt.Errorf("building svc (run from the repository root): %w\n%s", err, out)
		}
	}
	psPath, tsPath := filepath.Join(dir, "clip.ps"), filepath.Join(dir, "clip.ts")
	video, audio := seconds*25, seconds*48000/1024
	pipeline := fmt.Sprintf("videotestsrc num-buffers=%d pattern=snow ! video/x-raw,format=I420,width=1280,height=720,framerate=25/1 ! "+
		"x264enc speed-preset=ultrafast key-int-max=50 bframes=0 bitrate=1900 vbv-buf-capacity=1000 ! video/x-h264,profile=main ! h264parse ! tee name=v "+
		"audiotestsrc num-buffers=%d samplesperbuffer=1024 freq=1000 ! audio/x-raw,rate=48000,channels=2 ! avenc_aac bitrate=96000 ! aacparse ! tee name=a "+
		"v. ! queue ! ps.  a. ! queue ! ps.  mpegpsmux name=ps ! filesink location=%s "+
		"v. ! queue ! ts.  a. ! queue ! ts.  mpegtsmux name=ts ! filesink location=%s", video, audio, psPath, tsPath)
	if out, err := exec.Command("gst-launch-1.0", append([]string{"-q"}, strings.Fields(pipeline)...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("gst-launch-1.0: %w\n%s", err, out)
	}
	clip, err := filesource.LoadFile(tsPath)
	if err != nil {
		return err
	}
	ps, err := os.ReadFile(psPath)
	if err != nil {
		return err
	}
	packs, err := splitPacks(ps)
	if err != nil {
		return err
	}
	kbps := float64(len(ps)) * 8 / clip.Duration.Seconds() / 1000
	fmt.Printf("clip: %d frames, %s, PS %d packs %.0f kbit/s\n", len(clip.Frames), clip.Duration.Round(time.Millisecond), len(packs), kbps)
	var atDevice, online []time.Duration
	if nInvites > 0 {
		if atDevice, online, err = invites(svc, filepath.Join(dir, "platform"), nInvites, packs); err != nil {
			return err
		}
		fmt.Printf("INVITE -> first frame: p50 %.0f ms p99 %.0f ms\n", pct(online, 50), pct(online, 99))
	}
	type row struct{ ps, rtsp side }
	var rows []row
	for _, n := range counts {
		var r row
		if r.ps, err = runPS(svc, filepath.Join(dir, "eng-ps"), n, packs, uint64(len(clip.Frames)), clip.Duration.Seconds()); err != nil {
			return err
		}
		fmt.Printf("%d PS/RTP streams: %.2f%% core/stream, frames %d of %d, RTP lost %d of %d, socket drops %d (machine-wide %d), live %d, refused %d; "+
			"senders %.0f%% of a core, latest piece %s, %d of %d pieces over %s late; load average %s\n", n, r.ps.perStream(), r.ps.hub,
			r.ps.expected, r.ps.rtpLost, r.ps.packets, r.ps.drops, r.ps.rcvbuf, r.ps.live, r.ps.refused, r.ps.sendCPU/r.ps.media*100, r.ps.lateMax.Round(time.Millisecond),
			r.ps.lateOver, r.ps.pieces, lateLimit, r.ps.load)
		if !withRTSP {
			r.rtsp = side{streams: n, media: r.ps.media, cpu: 1}
		} else if r.rtsp, err = runRTSP(svc, filepath.Join(dir, "eng-rtsp"), n, clip); err != nil {
			return err
		}
		fmt.Printf("%d RTSP streams: %.2f%% core/stream, frames %d of %d\n", n, r.rtsp.perStream(), r.rtsp.hub, r.rtsp.expected)
		rows = append(rows, r)
	}
	var w strings.Builder
	fmt.Fprintf(&w, "## GB28181: INVITE to first frame, PS/RTP ingest against RTSP ingest (gbbench)\n\n%s. `go run ./test/bench/gbbench` (in `make bench`; "+
		"`-quick` for one small case), %s.\n\n", benchdoc.Machine(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	if nInvites > 0 {
		fmt.Fprintf(&w, "### INVITE to first frame\n\nA control node with its SIP server (in this process), an enrolled `svc agent` running its `svc engine` "+
			"(real processes), and a SIPp camera (the e2e tests' `gb28181_device.xml` registering with digest and answering with "+
			"`gb28181_answer.xml`, which notes each INVITE's port and SSRC in a file before its 200). %d rounds, one at a time: "+
			"`POST /api/v2/gb28181/live/invite` (UDP), and the moment the INVITE's line appears (polled every 2 ms) this program sends the PS "+
			"stream below to the offered port with the offered SSRC, as the device would; the stream is timed to Online in "+
			"`GET /api/v2/third-party/streams?state=Online` (polled every 20 ms by testkit.Within), which the control plane sets when the engine "+
			"reports the stream's first frame in the hub; then `live/stop` (BYE) and the stream gone before the next round.\n\n", nInvites)
		fmt.Fprintf(&w, "| measure | p50 ms | p99 ms | max ms | target |\n|---|--:|--:|--:|---|\n")
		fmt.Fprintf(&w, "| API request -> INVITE at the camera | %.0f | %.0f | %.0f | |\n", pct(atDevice, 50), pct(atDevice, 99), pct(atDevice, 100))
		fmt.Fprintf(&w, "| API request -> stream Online (first frame in the hub) | %.0f | %.0f | %.0f | p99 < 1000 ms (%s) |\n\n", pct(online, 50),
			pct(online, 99), pct(online, 100), benchdoc.Verdict(pct(online, 99) < 1000))
		fmt.Fprintf(&w, "With %d samples the p99 is the largest but one or two; the SIPp camera's INVITE handling includes a shell `echo` it runs "+
			"before answering.\n\n", nInvites)
	}
	if reg.devices > 0 {
		regs.markdown(&w)
	}
	if len(rows) == 0 {
		fmt.Print(w.String())
		return benchdoc.WriteSection(outPath, "gbbench", w.String())
	}
	fmt.Fprintf(&w, "### PS ingest\n\n")
	fmt.Fprintf(&w, "- Media: %s of 1280x720 25 fps H.264 (x264enc, keyframe every 2 s) + AAC, encoded once by GStreamer and muxed by `mpegpsmux` "+
		"(program stream with a PSM, %.0f kbit/s with the PS overhead, %d packs) and, through a tee, by `mpegtsmux` for the RTSP side: %d frames "+
		"per stream on both sides.\n", clip.Duration.Round(time.Millisecond), kbps, len(packs), len(clip.Frames))
	fmt.Fprintf(&w, "- Engine: `svc engine` under `taskset -c %s` with GOMAXPROCS=%d, no hooks, nothing playing. PS: one RTP server per stream "+
		"opened by `POST /api/v1/rtp-servers` (UDP, the stream's own port and SSRC, as a GB28181 INVITE does); this process sends the stream "+
		"in RTP packets of at most %d bytes, each PES at its PTS, one UDP socket per stream. RTSP: ANNOUNCE/RECORD over TCP "+
		"interleaved, one session per stream, frames sent at their timestamps. Starts are spread over the first second; the senders run on the "+
		"other core (which other work shares).\n", engineCores, len(strings.Split(engineCores, ",")), maxPayload)
	fmt.Fprintf(&w, "- CPU is the engine's user+system time from the first packet until it has taken everything (2 s after the last packet, "+
		"then until its frame count stops moving), per stream as %% of one core (CPU seconds / (streams x media seconds)). Frames lost = "+
		"frames sent - frames that entered the hub (engine stats `framesIn`) - %d start-up frames a stream: a PS stream is published from "+
		"its first keyframe, and a video frame is complete only when the next video PES starts, so the AAC frames muxed right after the "+
		"first keyframe reach the engine before it and are not published. Socket drops are the kernel's count at the RTP servers' sockets "+
		"(`/proc/net/udp`): datagrams that found a full receive queue. The senders' lateness is how far behind its PTS each piece (a PES "+
		"and what precedes it) went out; a sender that falls behind catches up in bursts.\n\n", startupFrames)
	fmt.Fprintf(&w, "| streams | PS/RTP %%core/stream | PS frames lost | RTP packets lost (of sent) | socket drops | PS streams live | "+
		"senders: pieces > %s late, latest | RTSP %%core/stream | RTSP frames lost | PS/RTSP CPU |\n", lateLimit)
	fmt.Fprintf(&w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(&w, "| %d | %.2f | %d of %d | %d of %d | %d | %d | %.1f%%, %s | %.2f | %d of %d | %.2fx |\n", r.ps.streams, r.ps.perStream(),
			r.ps.underLoad(), r.ps.expected, r.ps.rtpLost, r.ps.packets, r.ps.drops, r.ps.live, float64(r.ps.lateOver)*100/float64(max(r.ps.pieces, 1)),
			r.ps.lateMax.Round(time.Millisecond), r.rtsp.perStream(), r.rtsp.lost(), r.rtsp.expected, r.ps.perStream()/r.rtsp.perStream())
	}
	last := rows[len(rows)-1]
	fmt.Fprintf(&w, "\nTarget: at least 300 concurrent streams on one engine core with zero frames lost. Largest case: %d streams took %.0f%% of the "+
		"core with %d frames lost; at that rate one core holds about %.0f streams (%s).\n", last.ps.streams, last.ps.perStream()*float64(last.ps.streams),
		last.ps.underLoad(), 100/last.ps.perStream(), benchdoc.Verdict(last.ps.streams >= 300 && last.ps.underLoad() <= 0 && last.ps.drops == 0 &&
			last.ps.perStream()*float64(last.ps.streams) < 100))
	rmem, _ := os.ReadFile("/proc/sys/net/core/rmem_max")
	fmt.Fprintf(&w, "\nThe engine reads each RTP server's socket with recvmmsg(2), up to 16 datagrams a call into buffers it reuses, and asks "+
		"for an 8 MiB receive buffer, which the kernel caps at `net.core.rmem_max` (%s bytes on this machine; the agent's host tuning "+
		"recommends 32 MiB) and doubles for its bookkeeping. Where PS packets are lost on this machine (the runs noted "+
		"below), they are lost in the sockets' queues, which overflow while the engine or the senders wait for a core (see the load "+
		"average and the senders' lateness), not for want of engine CPU: RTSP over TCP is flow-controlled, so the same wait costs it nothing.\n", strings.TrimSpace(string(rmem)))
	fmt.Fprintf(&w, "\nThe machine's two cores are shared with other work, so per-stream figures move by 10-20%% between runs.\n")
	fmt.Print(w.String())
	return benchdoc.WriteSection(outPath, "gbbench", w.String())
}

func pct(lat []time.Duration, p int) float64 {
	return float64(lat[min(len(lat)*p/100, len(lat)-1)].Microseconds()) / 1000
}

// rcvbufErrors is the kernel's count of UDP datagrams dropped because a
// socket's receive queue was full (RcvbufErrors in /proc/net/snmp).
func rcvbufErrors() int64 {
	b, _ := os.ReadFile("/proc/net/snmp")
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "RcvbufErrors" && i < len(f) {
				v, _ := strconv.ParseInt(f[i], 10, 64)
				return v
			}
		}
	}
	return 0
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute figures: how much
// other work the shared machine ran meanwhile.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// socketDrops sums the kernel's drop counts (the last column of
// /proc/net/udp and udp6) of the UDP sockets bound to ports lo..hi: the
// datagrams that found those sockets' receive queues full.
func socketDrops(lo, hi int) int64 {
	var n int64
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) < 13 {
				continue
			}
			_, port, ok := strings.Cut(fs[1], ":")
			p, err := strconv.ParseInt(port, 16, 32)
			if !ok || err != nil || int(p) < lo || int(p) > hi {
				continue
			}
			d, _ := strconv.ParseInt(fs[len(fs)-1], 10, 64)
			n += d
		}
	}
	return n
}

// runPS sends n PS/RTP streams into a fresh engine.
func runPS(svc, dir string, n int, packs []pack, frames uint64, media float64) (side, error) {
	defer os.RemoveAll(dir)
	s := side{streams: n, media: media, expected: frames * uint64(n)}
	e, err := startEngine(svc, dir)
	if err != nil {
		return s, err
	}
	defer e.stop()
	// Below the ephemeral port range, where other programs (SIPp, builds' tests) bind at random.
	const basePort = 20000
	for i := range n {
		if err := e.openRTPServer(fmt.Sprintf("gb%04d", i), basePort+i, uint32(i+1)); err != nil {
			return s, err
		}
	}
	st0, err := e.stats()
	if err != nil {
		return s, err
	}
	cpu0, rcv0, send0 := e.cpuSeconds(), rcvbufErrors(), benchdoc.CPUSeconds(os.Getpid())
	var wg sync.WaitGroup
	var sent atomic.Int64
	var late lateness
	var refused atomic.Int64
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := sendPS(context.Background(), packs, fmt.Sprintf("127.0.0.1:%d", basePort+i), uint32(i+1), rand.N(time.Second), &late)
			sent.Add(int64(k))
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				// The RTP server closed (ICMP port unreachable):
				// the stream is not live at the end, which the table shows.
				refused.Add(1)
			case err != nil:
				errs <- err
			}
		}()
	}
	wg.Wait()
	s.refused = int(refused.Load())
	s.sendCPU = benchdoc.CPUSeconds(os.Getpid()) - send0
	s.lateMax, s.lateOver, s.pieces = time.Duration(late.max.Load()), late.over.Load(), late.all.Load()
	drain(e)
	s.cpu = e.cpuSeconds() - cpu0
	s.drops = socketDrops(basePort, basePort+n-1)
	s.load = loadAverage()
	close(errs)
	if err := <-errs; err != nil {
		return s, err
	}
	st1, err := e.stats()
	if err != nil {
		return s, err
	}
	s.hub, s.packets, s.rcvbuf = st1.FramesIn-st0.FramesIn, int(sent.Load()), rcvbufErrors()-rcv0
	servers, err := e.rtpServers()
	if err != nil {
		return s, err
	}
	for _, sv := range servers {
		s.rtpLost += sv.Lost
		if sv.Published {
			s.live++
		}
	}
	return s, nil
}

// drain waits until the engine has taken what it was sent: 2 s, then
// until its frame count stops moving for a second (at most 30 s). An
// engine that had fallen behind (on a core other work shares) is still
// reading its sockets' queues when the senders finish; that backlog is
// late, not lost.
func drain(e *engine) {
	time.Sleep(2 * time.Second)
	var last uint64
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		st, err := e.stats()
		if err != nil || st.FramesIn == last {
			return
		}
		last = st.FramesIn
	}
}

// runRTSP publishes n RTSP sessions of the clip into a fresh engine.
func runRTSP(svc, dir string, n int, clip *filesource.Clip) (side, error) {
	defer os.RemoveAll(dir)
	s := side{streams: n, media: clip.Duration.Seconds(), expected: uint64(len(clip.Frames)) * uint64(n)}
	e, err := startEngine(svc, dir)
	if err != nil {
		return s, err
	}
	defer e.stop()
	var pubs []*rtsppub.Publisher
	defer func() {
		for _, p := range pubs {
			p.Close()
		}
	}()
	for i := range n {
		p, err := rtsppub.Publish(e.rtsp, fmt.Sprintf("live/rtsp%04d", i), clip.Tracks, false)
		if err != nil {
			return s, err
		}
		pubs = append(pubs, p)
	}
	st0, err := e.stats()
	if err != nil {
		return s, err
	}
	cpu0 := e.cpuSeconds()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(rand.N(time.Second))
			start := time.Now()
			for _, f := range clip.Frames {
				if wait := time.Until(start.Add(f.DTS)); wait > time.Millisecond {
					time.Sleep(wait)
				}
				if err := p.Send(f.Track.ID, f); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	drain(e)
	s.cpu = e.cpuSeconds() - cpu0
	close(errs)
	if err := <-errs; err != nil {
		return s, err
	}
	st1, err := e.stats()
	if err != nil {
		return s, err
	}
	s.hub, s.live = st1.FramesIn-st0.FramesIn, st1.Streams
	return s, nil
}
