// Command fanoutbench measures what fanning one live stream out to many
// HTTP-FLV players costs the engine, against a floor.
//
// The engine runs as its own process (`svc engine`, built from this tree)
// playing an H.264+AAC clip made with ffmpeg as its demo stream; a Go load
// client in this process opens N HTTP-FLV players on loopback, reads every
// tag header and checks continuity. For each N it measures the engine's
// CPU over a fixed window (from /proc), the bytes delivered, and the frames
// the engine dropped. The floor is this program run with -floor: the same
// clip, the same tag bytes, written to every socket in turn with one write
// each, no hub and no queues; it is measured the same way in the same run.
// A last phase measures time to first frame, frame-to-wire latency and
// resident memory per player at 1,000 players. It writes its section of
// docs/benchmarks.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/mediaengine/filesource"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"

	"github.com/svcplatform/svc/test/bench/benchdoc"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	window := flag.Duration("window", 8*time.Second, "measurement window per step")
	flag.DurationVar(&mergeWrite, "merge-write", 40*time.Millisecond, "the engine's mergeWrite for the fan-out ladders (the latency phase uses 0)")
	maxReaders := flag.Int("max-readers", 9000, "largest N tried (each player takes a file descriptor in the client and in the server)")
	floorMode := flag.Bool("floor", false, "run as the floor server (used by the benchmark itself)")
	floorAddr := flag.String("floor-addr", "", "floor: listen address")
	floorClip := flag.String("floor-clip", "", "floor: clip to play")
	floorStats := flag.String("floor-stats", "", "floor: write the write-spread percentiles here on exit")
	flag.IntVar(&engineProcs, "engine-gomaxprocs", 0, "GOMAXPROCS of the engine processes (0: the Go default, all cores)")
	flag.StringVar(&engineProfile, "engine-cpuprofile", "", "have each engine write a CPU profile to this file (the last one wins)")
	flag.IntVar(&joins, "joins", 300, "players that join one after another, for the time to first frame, while 1,000 play")
	latencyOnly := flag.Bool("latency-only", false, "measure only the latency and memory phase and write only its section")
	flag.Parse()
	if *floorMode {
		if err := runFloor(*floorAddr, *floorClip, *floorStats); err != nil {
			fmt.Fprintln(os.Stderr, "fanoutbench floor:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *window, *maxReaders, *latencyOnly); err != nil {
		fmt.Fprintln(os.Stderr, "fanoutbench:", err)
		os.Exit(1)
	}
}

// mergeWrite is the engine setting the fan-out ladders run with.
var mergeWrite time.Duration

// joins is how many players join for the time-to-first-frame figure; its
// p99 needs a few hundred of them to be more than the single worst join.
var joins int

// benchCase is one bitrate with its ladder of player counts.
type benchCase struct {
	name         string
	size         string
	videoKbps    int
	audioKbps    int
	ladder       []int
	clip         string
	gapV, gapA   uint32
	nominalKbps  float64
	framesPerSec float64
}

func run(outPath string, window time.Duration, maxReaders int, latencyOnly bool) error {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		return fmt.Errorf("ffmpeg is required (Debian package ffmpeg; make bench installs it): %w", err)
	}
	dir, err := os.MkdirTemp("", "fanoutbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	svc := filepath.Join(dir, "svc")
	if out, err := exec.Command("go", "build", "-o", svc, "./cmd/svc").CombinedOutput(); err != nil {
		return fmt.Errorf("building svc (run from the repository root): %w\n%s", err, out)
	}
	cases := []*benchCase{
		{name: "about 200 kbps", size: "640x360", videoKbps: 170, audioKbps: 32, ladder: []int{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000}},
		{name: "about 2 Mbps", size: "1280x720", videoKbps: 1900, audioKbps: 96, ladder: []int{250, 500, 1000, 1500, 2000, 2500, 3000, 4000, 5000}},
	}
	if latencyOnly {
		cases = cases[:1]
	}
	for _, c := range cases {
		if err := makeClip(dir, c); err != nil {
			return err
		}
	}
	ctx := context.Background()
	if latencyOnly {
		lat, err := measureLatency(ctx, svc, filepath.Join(dir, "latency"), cases[0], window)
		if err != nil {
			return err
		}
		fmt.Printf("time to first frame (%d joins while %d play): p50 %.1f p99 %.1f max %.1f ms\n", len(lat.ttff), lat.players,
			msOf(pct(lat.ttff, 0.5)), msOf(pct(lat.ttff, 0.99)), msOf(pct(lat.ttff, 1)))
		return benchdoc.WriteSection(outPath, "fanoutbench-latency", reportLatency("go run ./test/bench/fanoutbench -latency-only -window "+window.String(), cases[0], lat))
	}
	var results [][3][]step
	for _, c := range cases {
		fmt.Fprintf(os.Stderr, "== %s\n", c.name)
		res, err := ladder(ctx, svc, filepath.Join(dir, "engine-"+strconv.Itoa(c.videoKbps)), c, window, maxReaders)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	fmt.Fprintf(os.Stderr, "== latency and memory at 1,000 players\n")
	lat, err := measureLatency(ctx, svc, filepath.Join(dir, "latency"), cases[0], window)
	if err != nil {
		return err
	}
	cmd := "go run ./test/bench/fanoutbench -window " + window.String() + " -merge-write " + mergeWrite.String()
	if err := benchdoc.WriteSection(outPath, "fanoutbench", report(cmd, window, cases, results)); err != nil {
		return err
	}
	return benchdoc.WriteSection(outPath, "fanoutbench-latency", reportLatency(cmd, cases[0], lat))
}

// ladder measures, for each N, the engine with merged writes, the engine
// writing every frame at once, and the floor, until the merged engine
// fails a step. It returns the three step lists in that order.
func ladder(ctx context.Context, svc, dir string, c *benchCase, window time.Duration, maxReaders int) ([3][]step, error) {
	var res [3][]step
	merged, err := startEngine(svc, dir+"-merged", c.clip, mergeWrite)
	if err != nil {
		return res, err
	}
	defer merged.stop()
	plain, err := startEngine(svc, dir+"-plain", c.clip, 0)
	if err != nil {
		return res, err
	}
	defer plain.stop()
	fl, err := startFloor(c.clip, "")
	if err != nil {
		return res, err
	}
	defer fl.stop()
	for _, n := range c.ladder {
		if n > maxReaders {
			break
		}
		m := measure(ctx, merged, c, n, window)
		// The machine is shared: a step that failed while other processes
		// took more than half a core is measured again, up to twice.
		for try := 0; !m.pass() && m.err == nil && m.otherCores > 0.5 && try < 2; try++ {
			fmt.Fprintf(os.Stderr, "N=%d merged %s (other load; measuring again)\n", n, m)
			retries := m.retries + 1
			m = measure(ctx, merged, c, n, window)
			m.retries = retries
		}
		p := measure(ctx, plain, c, n, window)
		f := measure(ctx, fl, c, n, window)
		fmt.Fprintf(os.Stderr, "N=%d merged %s\n  plain %s\n  floor %s\n", n, m, p, f)
		res[0], res[1], res[2] = append(res[0], m), append(res[1], p), append(res[2], f)
		if !m.pass() {
			break
		}
	}
	return res, nil
}

// makeClip encodes a 10 s H.264+AAC MPEG-TS clip at the case's bitrate
// (testsrc2 and a sine tone, a keyframe every 2 s).
func makeClip(dir string, c *benchCase) error {
	c.clip = filepath.Join(dir, fmt.Sprintf("clip-%dk.ts", c.videoKbps+c.audioKbps))
	args := []string{"-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=" + c.size + ":rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "10",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "50", "-bf", "0",
		"-b:v", fmt.Sprintf("%dk", c.videoKbps), "-maxrate", fmt.Sprintf("%dk", c.videoKbps*6/5), "-bufsize", fmt.Sprintf("%dk", c.videoKbps*2),
		"-c:a", "aac", "-b:a", fmt.Sprintf("%dk", c.audioKbps), "-ac", "2", "-f", "mpegts", c.clip}
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg: %w\n%s", err, out)
	}
	clip, err := filesource.LoadFile(c.clip)
	if err != nil {
		return err
	}
	// The largest step between frames of a track is the loop join; one
	// frame more than that means a frame was lost.
	first := map[*media.Track]time.Duration{}
	last := map[*media.Track]time.Duration{}
	gaps := map[media.Kind]time.Duration{}
	var bytes int
	videoFrames := 0
	for _, f := range clip.Frames {
		bytes += f.Size()
		if l, ok := last[f.Track]; ok {
			gaps[f.Track.Kind()] = max(gaps[f.Track.Kind()], f.DTS-l)
		} else {
			first[f.Track] = f.DTS
		}
		last[f.Track] = f.DTS
		if f.Track.Kind() == media.KindVideo {
			videoFrames++
		}
	}
	for t, l := range last { // the join: the next loop's first frame
		gaps[t.Kind()] = max(gaps[t.Kind()], clip.Duration+first[t]-l)
	}
	c.gapV = uint32(gaps[media.KindVideo].Milliseconds()) + 39
	c.gapA = uint32(gaps[media.KindAudio].Milliseconds()) + 20
	c.nominalKbps = float64(bytes) * 8 / clip.Duration.Seconds() / 1000
	c.framesPerSec = float64(videoFrames) / clip.Duration.Seconds()
	return nil
}

// step is one measurement of one server at one player count.
type step struct {
	n            int
	err          error
	cores        float64 // server CPU cores over the window
	clientCores  float64
	otherCores   float64 // everything else on the machine: other processes, the kernel's softirq work
	cpuPerGB     float64 // server CPU seconds per GB delivered
	mbps         float64 // delivered, all players
	dropped      int64   // engine-counted drops
	discontinued int64   // client-seen continuity breaks
	failed       int64
	fpsPerPlayer float64
	wantFPS      float64
	retries      int // measured again because other load starved it
}

func (s step) pass() bool {
	return s.err == nil && s.dropped == 0 && s.discontinued == 0 && s.failed == 0 && s.cores <= 1.0 && s.fpsPerPlayer >= 0.98*s.wantFPS
}

func (s step) String() string {
	if s.err != nil {
		return "error: " + s.err.Error()
	}
	return fmt.Sprintf("%.2f cores, %.1f CPU s/GB, %.0f Mbit/s, drops %d, breaks %d, failed %d, %.1f fps/player, client %.2f cores, other %.2f cores",
		s.cores, s.cpuPerGB, s.mbps, s.dropped, s.discontinued, s.failed, s.fpsPerPlayer, s.clientCores, s.otherCores)
}

func localIPs() []string {
	var ips []string
	for i := 1; i <= 16; i++ {
		ips = append(ips, "127.0.0."+strconv.Itoa(i))
	}
	return ips
}

func measure(ctx context.Context, p *proc, c *benchCase, n int, window time.Duration) step {
	lc := &loadClient{addr: p.addr, path: "/live/bench.live.flv", maxVideoGap: c.gapV, maxAudioGap: c.gapA, localIPs: localIPs()}
	s := step{n: n, wantFPS: c.framesPerSec}
	defer func() {
		lc.close()
		time.Sleep(time.Second)
	}()
	if err := lc.open(ctx, n, time.Minute); err != nil {
		s.err = err
		return s
	}
	time.Sleep(3 * time.Second)
	c0, cpu0, self0, all0 := lc.snapshot(), p.cpuSeconds(), selfCPU(), machineBusy()
	st0, _ := p.stats()
	t0 := time.Now()
	time.Sleep(window)
	c1, cpu1, self1, all1 := lc.snapshot(), p.cpuSeconds(), selfCPU(), machineBusy()
	st1, _ := p.stats()
	dt := time.Since(t0).Seconds()
	d := c1.minus(c0)
	s.cores = (cpu1 - cpu0) / dt
	s.clientCores = (self1 - self0) / dt
	s.otherCores = max(0, (all1-all0)/dt-s.cores-s.clientCores)
	if d.bytes > 0 {
		s.cpuPerGB = (cpu1 - cpu0) / (float64(d.bytes) / 1e9)
	}
	s.mbps = float64(d.bytes) * 8 / dt / 1e6
	s.dropped = int64(st1.DroppedFrames - st0.DroppedFrames)
	s.discontinued, s.failed = d.discontinued, d.failed
	s.fpsPerPlayer = float64(d.video) / float64(n) / dt
	return s
}

// machineBusy is the CPU time the whole machine spent busy, in seconds.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line := strings.SplitN(string(b), "\n", 2)[0]
	f := strings.Fields(line)
	total := 0.0
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		x, _ := strconv.ParseFloat(v, 64)
		total += x
	}
	return total / 100
}

func selfCPU() float64 {
	p := &proc{cmd: &exec.Cmd{Process: &os.Process{Pid: os.Getpid()}}}
	return p.cpuSeconds()
}

// latency holds the last phase's results.
type latency struct {
	players            int
	rssIdle, rssLoaded int64
	// heapIdle and heapLoaded are the engine's Go heap in use (its stats).
	heapIdle, heapLoaded uint64
	// rssDouble and heapDouble are taken with twice the players.
	rssDouble   int64
	heapDouble  uint64
	ttff        []time.Duration
	few, many   engineapi.Latency // frame-to-wire at fewPlayers and at players
	floorSpread spreadStats       // the floor's time to write one tag to every socket, at players
}

// fewPlayers is the player count at which frame-to-wire shows the
// engine's own path rather than the time 1,000 writes take on two cores.
const fewPlayers = 10

// measureLatency measures, each on a fresh engine: frame-to-wire at 10
// players; then RSS idle and with 1,000 players, frame-to-wire at 1,000,
// and the time to first frame of `joins` players joining one after
// another while the 1,000 play. The floor's spread at 1,000 gives the comparison.
func measureLatency(ctx context.Context, svc, dir string, c *benchCase, window time.Duration) (latency, error) {
	l := latency{players: 1000}
	newClient := func(addr string) *loadClient {
		return &loadClient{addr: addr, path: "/live/bench.live.flv", maxVideoGap: c.gapV, maxAudioGap: c.gapA, localIPs: localIPs()}
	}
	run := func(sub string, n int, during func(eng *proc) error) (engineapi.Latency, error) {
		eng, err := startEngine(svc, filepath.Join(dir, sub), c.clip, 0)
		if err != nil {
			return engineapi.Latency{}, err
		}
		defer eng.stop()
		time.Sleep(3 * time.Second)
		// Start-up leaves freed memory the Go runtime hands back to the
		// system only gradually: idle is the least RSS over 5 s.
		l.rssIdle = eng.settledRSS(5 * time.Second)
		if st, err := eng.stats(); err == nil {
			l.heapIdle = st.HeapBytes
		}
		lc := newClient(eng.addr)
		defer lc.close()
		if err := lc.open(ctx, n, time.Minute); err != nil {
			return engineapi.Latency{}, err
		}
		time.Sleep(window)
		if err := during(eng); err != nil {
			return engineapi.Latency{}, err
		}
		st, err := eng.stats()
		return st.FrameToWire, err
	}
	var err error
	if l.few, err = run("few", fewPlayers, func(*proc) error { return nil }); err != nil {
		return l, err
	}
	l.many, err = run("many", l.players, func(eng *proc) error {
		l.rssLoaded = eng.rssBytes()
		if st, err := eng.stats(); err == nil {
			l.heapLoaded = st.HeapBytes
		}
		for i := 0; i < joins; i++ {
			one := newClient(eng.addr)
			if err := one.open(ctx, 1, 5*time.Second); err != nil {
				one.close()
				return errors.New("a joining player did not start: " + err.Error())
			}
			l.ttff = append(l.ttff, one.takeTTFF()...)
			one.close()
			time.Sleep(50 * time.Millisecond)
		}
		// Memory per player is the cost of 1,000 more: both figures are
		// taken in the same steady state (the runtime collecting all the
		// time), which an idle engine that has not collected since start-up
		// is not.
		more := newClient(eng.addr)
		defer more.close()
		if err := more.open(ctx, l.players, time.Minute); err != nil {
			return err
		}
		time.Sleep(window / 2)
		l.rssDouble = eng.rssBytes()
		if st, err := eng.stats(); err == nil {
			l.heapDouble = st.HeapBytes
		}
		return nil
	})
	if err != nil {
		return l, err
	}
	sort.Slice(l.ttff, func(i, j int) bool { return l.ttff[i] < l.ttff[j] })
	statsFile := filepath.Join(dir, "floor-stats.json")
	fl, err := startFloor(c.clip, statsFile)
	if err != nil {
		return l, err
	}
	lc := newClient(fl.addr)
	err = lc.open(ctx, l.players, time.Minute)
	if err == nil {
		time.Sleep(window)
	}
	lc.close()
	fl.stop()
	if err != nil {
		return l, err
	}
	b, err := os.ReadFile(statsFile)
	if err != nil {
		return l, err
	}
	return l, json.Unmarshal(b, &l.floorSpread)
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(p*float64(len(d))))]
}
