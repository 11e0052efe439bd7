// Command whepbench measures what fanning one live stream out to many WHEP
// (WebRTC) viewers costs the engine.
//
// The engine runs as its own process (`svc engine`, built from this tree)
// playing a 720p H.264 clip (about 1.5 Mbps, made with ffmpeg) as its demo
// stream; a load client, this program with -client in a process of its own,
// opens N pion viewers on loopback, each negotiating WHEP, receiving the
// video over DTLS-SRTP and counting sequence gaps. For each N it measures
// the engine's CPU over a window (from /proc), the packets delivered and
// lost, and the time from each offer to its first packet. It writes its
// section of docs/benchmarks.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"

	"github.com/svcplatform/svc/test/bench/benchdoc"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	window := flag.Duration("window", 10*time.Second, "measurement window per step")
	ladder := flag.String("ladder", "25,50,100,200", "numbers of viewers, comma-separated")
	client := flag.Bool("client", false, "run as the load client (used by the benchmark itself)")
	url := flag.String("url", "", "client: the WHEP URL")
	n := flag.Int("n", 0, "client: viewers")
	seconds := flag.Int("seconds", 0, "client: how long to play")
	stats := flag.String("stats", "", "client: where to write its counters")
	flag.BoolVar(&pin, "pin", runtime.NumCPU() >= 2, "pin the engine to CPU 0 and the load client to CPU 1 (taskset)")
	flag.IntVar(&niceness, "nice", 0, "run the engine and the load client at this niceness (negative needs root: other work on a shared machine then waits)")
	svcBin := flag.String("svc", "", "the svc binary to run as the engine (default: built from this tree), for an A/B against another build")
	flag.StringVar(&engineProfile, "engine-cpuprofile", "", "have the engine write a CPU profile to this file")
	flag.Parse()
	if *client {
		if err := runClient(*url, *n, *seconds, *stats); err != nil {
			fmt.Fprintln(os.Stderr, "whepbench client:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *window, *ladder, *svcBin); err != nil {
		fmt.Fprintln(os.Stderr, "whepbench:", err)
		os.Exit(1)
	}
}

// step is one measured N.
type step struct {
	viewers   int
	cores     float64
	mbps      float64
	lossPct   float64
	firstP50  float64
	firstP99  float64
	delayP50  float64
	delayP99  float64
	connected int
	load      string
}

func run(outPath string, window time.Duration, ladderFlag, svc string) error {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		return fmt.Errorf("ffmpeg is required (Debian package ffmpeg; make bench installs it): %w", err)
	}
	dir, err := os.MkdirTemp("", "whepbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if svc == "" {
		svc = filepath.Join(dir, "svc")
		if out, err := exec.Command("go", "build", "-o", svc, "./cmd/svc").CombinedOutput(); err != nil {
			return fmt.Errorf("building svc (run from the repository root): %w\n%s", err, out)
		}
	}
	clip := filepath.Join(dir, "clip.ts")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "10", "-c:v", "libx264", "-preset", "veryfast",
		"-pix_fmt", "yuv420p", "-g", "50", "-bf", "0", "-b:v", "1500k", "-maxrate", "1800k", "-bufsize", "3000k",
		"-c:a", "aac", "-b:a", "64k", "-f", "mpegts", clip).CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg: %w\n%s", err, out)
	}
	eng, whepURL, err := startEngine(svc, dir, clip)
	if err != nil {
		return err
	}
	defer func() {
		// An interrupt lets the engine write its profile.
		eng.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { eng.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			eng.Process.Kill()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var steps []step
	stopped := ""
	for _, f := range strings.Split(ladderFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("ladder: %q", f)
		}
		st, err := measure(self, eng.Process.Pid, whepURL, n, window, filepath.Join(dir, fmt.Sprintf("stats-%d.json", n)))
		if err != nil {
			// The ladder ends where this machine cannot go on; the report
			// says where and why.
			stopped = err.Error()
			fmt.Println(stopped)
			break
		}
		fmt.Printf("%d viewers (%d receiving): %.3f cores, %.1f viewers/core, %.1f Mbit/s, loss %.3f%%, delay p50 %.1f p99 %.1f ms, first packet p50 %.0f p99 %.0f ms, load %s\n",
			st.viewers, st.connected, st.cores, float64(st.connected)/st.cores, st.mbps, st.lossPct, st.delayP50, st.delayP99, st.firstP50, st.firstP99, st.load)
		steps = append(steps, st)
	}
	if len(steps) == 0 {
		return errors.New(stopped)
	}
	return benchdoc.WriteSection(outPath, "whepbench", report("go run ./test/bench/whepbench -window "+window.String()+" -ladder "+ladderFlag, window, steps,
		stopped))
}

func freeAddr(network string) string {
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		defer c.Close()
		return c.LocalAddr().String()
	}
	return benchdoc.FreeAddr()
}

// pin runs the engine on CPU 0 and the load client on CPU 1, so neither
// takes the other's core and the engine's CPU is its own.
var pin bool

// niceness is the engine's and the load client's niceness.
var niceness int

// pinned prefixes a command with taskset when pinning, and with nice.
func pinned(cpu string, name string, args ...string) *exec.Cmd {
	if pin {
		name, args = "taskset", append([]string{"-c", cpu, name}, args...)
	}
	if niceness != 0 {
		name, args = "nice", append([]string{"-n", strconv.Itoa(niceness), name}, args...)
	}
	return exec.Command(name, args...)
}

// engineProfile, when set, has the engine write a CPU profile there.
var engineProfile string

// startEngine runs `svc engine` with the clip as live/bench and WebRTC on
// loopback, and returns the WHEP URL of the stream.
func startEngine(svc, dir, clip string) (*exec.Cmd, string, error) {
	secretFile := filepath.Join(dir, "control-secret")
	if err := os.WriteFile(secretFile, []byte("bench-secret"), 0o600); err != nil {
		return nil, "", err
	}
	cfg := engineapi.Defaults()
	cfg.NodeID, cfg.ControlAddr, cfg.HTTPAddr, cfg.RTSPAddr, cfg.ControlSecretFile = "bench", freeAddr("tcp"), freeAddr("tcp"), freeAddr("tcp"), secretFile
	// A range of its own, apart from another run's on the same machine.
	cfg.RTPPortMin = 33000 + os.Getpid()%200*100
	cfg.RTPPortMax = cfg.RTPPortMin + 99
	// ICE-TCP on a port of its own too: an empty address means the default
	// 8189, which another engine on the machine may hold.
	cfg.WebRTC.UDPAddr, cfg.WebRTC.TCPAddr = freeAddr("udp"), freeAddr("tcp")
	cfg.DataDir, cfg.LogLevel, cfg.DemoFile, cfg.DemoPath = dir, "error", clip, "live/bench"
	b, err := cfg.Marshal()
	if err != nil {
		return nil, "", err
	}
	cfgFile := filepath.Join(dir, "engine.yaml")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		return nil, "", err
	}
	args := []string{"engine", "--config", cfgFile}
	if engineProfile != "" {
		args = append(args, "--cpuprofile", engineProfile)
	}
	cmd := pinned("0", svc, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	time.Sleep(3 * time.Second) // the clip loads and becomes ready
	return cmd, "http://" + cfg.HTTPAddr + "/live/bench/whep", nil
}

// measure runs a load client of n viewers and measures the engine over
// window once they all receive.
func measure(self string, pid int, url string, n int, window time.Duration, statsPath string) (step, error) {
	const setup, warmup = 120 * time.Second, 3 * time.Second
	client := pinned("1", self, "-client", "-url", url, "-n", strconv.Itoa(n), "-seconds", strconv.Itoa(int((setup + warmup + window).Seconds())),
		"-stats", statsPath)
	client.Stderr = os.Stderr
	if err := client.Start(); err != nil {
		return step{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- client.Wait() }()
	ended := false
	defer func() {
		if !ended {
			client.Process.Kill()
			<-exited
		}
		time.Sleep(2 * time.Second) // the engine lets the sessions go
	}()
	// Every viewer should receive; on a loaded machine a few handshakes
	// may time out, which the report shows (connected) rather than hides.
	deadline := time.Now().Add(setup)
	for {
		st, err := readStats(statsPath)
		if err == nil && st.Connected == n {
			break
		}
		select {
		case err := <-exited:
			ended = true
			return step{}, fmt.Errorf("%d viewers: the load client ended while they joined: %w", n, err)
		default:
		}
		if time.Now().After(deadline) {
			if st.Connected < n*95/100 {
				return step{}, fmt.Errorf("%d viewers: only %d connected within %s", n, st.Connected, setup)
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(warmup)
	if err := client.Process.Signal(syscall.SIGUSR1); err != nil {
		return step{}, err
	}
	cpu0, t0 := benchdoc.CPUSeconds(pid), time.Now()
	time.Sleep(window)
	cpu1, elapsed := benchdoc.CPUSeconds(pid), time.Since(t0)
	if err := client.Process.Signal(syscall.SIGUSR1); err != nil {
		return step{}, err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	var after clientStats
	var err error
	for end := time.Now().Add(30 * time.Second); ; {
		after, err = readStats(statsPath)
		if err == nil && after.Window {
			break
		}
		if time.Now().After(end) {
			return step{}, fmt.Errorf("%d viewers: the load client did not report its window", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pkts, lost := after.Packets, after.Lost
	st := step{viewers: n, cores: (cpu1 - cpu0) / elapsed.Seconds(), mbps: float64(after.Bytes) * 8 / elapsed.Seconds() / 1e6,
		connected: after.Connected}
	if pkts+lost > 0 {
		st.lossPct = 100 * float64(lost) / float64(pkts+lost)
	}
	st.firstP50, st.firstP99 = after.FirstP50, after.FirstP99
	st.delayP50, st.delayP99 = after.DelayP50, after.DelayP99
	st.load = strings.Join(strings.Fields(string(load))[:3], " ")
	return st, nil
}

func pctMs(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p * float64(len(s)-1))
	return float64(s[i]) / float64(time.Millisecond)
}

func report(cmd string, window time.Duration, steps []step, stopped string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## WHEP fan-out (whepbench)\n\n")
	fmt.Fprintf(&b, "- Command: `%s` on %s.\n", cmd, benchdoc.Machine())
	where := "The load client shares the machine's cores with the engine."
	if pin {
		where = "The engine runs on CPU 0 and the load client on CPU 1 (`taskset`), so the engine's Go runtime has one core (GOMAXPROCS 1); " +
			"other work on the machine still shares both."
	}
	fmt.Fprintf(&b, "- Set-up: `svc engine` as its own process plays a 10 s 1280x720 H.264 clip at about 1.5 Mbit/s (keyframe every 2 s, "+
		"no B-frames, looped live; its AAC track is not carried over WebRTC); a pion load client in another process opens N WHEP viewers on "+
		"loopback (video only, DTLS-SRTP). The client reads each viewer's socket itself and counts RTP by its clear header (SRTP encrypts "+
		"only the payload): it neither decrypts nor hands media to pion, so it sends no NACKs and loss is every packet that did not arrive. "+
		"%s Engine CPU is the engine process's own, from /proc, over %s after 3 s of warm-up; loss is sequence gaps; forwarding delay is, "+
		"for the first packet of each frame, its arrival time less its RTP time, less the least such value that viewer had in the window "+
		"(the source is paced by its timestamps, so this is the time a frame spent queued in the engine's fan-out and in the client beyond "+
		"the fastest frame); first packet is the time from a viewer's offer to its first RTP packet, while the others were joining.\n\n",
		where, window)
	fmt.Fprintf(&b, "| viewers (receiving) | engine cores | viewers per core | delivered Mbit/s | loss | forwarding delay p50 / p99 | "+
		"first packet p50 / p99 | load average |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range steps {
		fmt.Fprintf(&b, "| %d (%d) | %.3f | %.0f | %.1f | %.3f%% | %.1f / %.1f ms | %.0f / %.0f ms | %s |\n", s.viewers, s.connected, s.cores,
			float64(s.connected)/s.cores, s.mbps, s.lossPct, s.delayP50, s.delayP99, s.firstP50, s.firstP99, s.load)
	}
	if stopped != "" {
		fmt.Fprintf(&b, "\nThe ladder stopped here: %s.\n", stopped)
	}
	fmt.Fprintf(&b, "\nTarget (issue 19): at least 300 viewers per engine core with under 0.5%% loss and forwarding delay p99 under 15 ms; "+
		"anchor LiveKit's published ~190 per vCPU.\n")
	return b.String()
}
