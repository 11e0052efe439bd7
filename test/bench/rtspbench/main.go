// Command rtspbench measures what the engine's RTSP server costs to serve
// one live H.264+AAC stream to N players over TCP interleaved: the
// server's CPU seconds per GB delivered, the cores it uses, and whether
// any player lost frames, at about 200 kbit/s and 2 Mbit/s. ffmpeg
// publishes a pre-encoded clip in real time into the server (ANNOUNCE/
// RECORD), rtsptest.Relay fans it out, and the players run in a child
// process (this program with -role players) so their CPU is not counted.
// The floor is the same bytes written to the same number of sockets by a
// minimal loop. It writes its section of docs/benchmarks.md.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/testkit"
)

func main() {
	role := flag.String("role", "server", "server (the benchmark), or players or sink (its load children)")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	dur := flag.Duration("duration", 8*time.Second, "measured window per step")
	url := flag.String("url", "", "players: stream URL")
	n := flag.Int("n", 0, "players: how many")
	low := flag.String("low", "100,500,1000,2000", "player counts at about 200 kbit/s")
	high := flag.String("high", "50,100,200,400", "player counts at about 2 Mbit/s")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the server process to this file")
	flag.Parse()
	stopProfile := func() {}
	if *role == "server" {
		stopProfile, _ = benchdoc.CPUProfile(*cpuprofile)
	}
	defer stopProfile()
	var err error
	switch *role {
	case "players":
		err = players(*url, *n)
	case "sink":
		err = sink(*url, *n)
	default:
		err = bench(*out, *dur, counts(*low), counts(*high))
	}
	if err != nil {
		stopProfile()
		fmt.Fprintln(os.Stderr, "rtspbench:", err)
		os.Exit(1)
	}
}

func counts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// profile is one stream rate the benchmark runs at.
type profile struct {
	name, size, vrate, arate string
}

var profiles = []profile{
	{"about 200 kbit/s (320x240, 25 fps)", "320x240", "160k", "32k"},
	{"about 2 Mbit/s (1280x720, 25 fps)", "1280x720", "1900k", "96k"},
}

// step is the result of one player count.
type step struct {
	players        int
	connected      int
	seconds        float64
	bytes          uint64
	cpu            float64 // server CPU seconds in the window
	drops          int64
	gaps           int64
	floorCPU       float64
	floorBytes     uint64
	floorConnected int
}

func bench(outPath string, dur time.Duration, low, high []int) error {
	for _, tool := range []string{"ffmpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is required (scripts/install-deps.sh bench): %w", tool, err)
		}
	}
	dir, err := os.MkdirTemp("", "rtspbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var results [][]step
	for i, p := range profiles {
		ns := low
		if i == 1 {
			ns = high
		}
		r, err := runProfile(dir, p, ns, dur)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		results = append(results, r)
	}
	cmd := "go run ./test/bench/rtspbench -duration " + dur.String()
	section := report(cmd, dur, results)
	fmt.Print(section)
	return benchdoc.WriteSection(outPath, "rtspbench", section)
}

func runProfile(dir string, p profile, ns []int, dur time.Duration) ([]step, error) {
	clip := filepath.Join(dir, strings.ReplaceAll(p.size, "x", "_")+".mp4")
	enc := childCommand("ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
		"-f", "lavfi", "-i", "testsrc2=size="+p.size+":rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", "10", "-c:v", "libx264", "-preset", "veryfast", "-b:v", p.vrate, "-maxrate", p.vrate, "-bufsize", p.vrate,
		"-g", "50", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", p.arate, clip)
	if out, err := enc.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("encode the clip: %w: %s", err, out)
	}
	relay := rtsptest.NewRelay()
	relay.QueueSize = 256 // about 5 s of frames: a player further behind loses frames
	srv, err := rtspserver.New(rtspserver.Config{Addr: "127.0.0.1:0"}, relay)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(context.Background()); err != nil {
		return nil, err
	}
	defer srv.Close()
	url := "rtsp://" + srv.Addr().String() + "/bench/stream"
	pub := childCommand("ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", clip,
		"-c", "copy", "-f", "rtsp", "-rtsp_transport", "tcp", url)
	if err := pub.Start(); err != nil {
		return nil, err
	}
	defer func() { pub.Process.Kill(); pub.Wait() }()
	path := media.Path{Vhost: media.DefaultVhost, App: "bench", Stream: "stream"}
	if !testkit.Within(10*time.Second, func() bool { s := relay.Stream(path); return s != nil && s.Keyframes.Load() > 0 }) {
		return nil, errors.New("the publisher did not start")
	}
	var steps []step
	for _, n := range ns {
		st, err := measure(srv, relay.Stream(path), url, n, dur)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	// The floor: the bytes one player received per second, written by a
	// bare loop to as many sockets.
	for i := range steps {
		rate := float64(steps[i].bytes) / steps[i].seconds / float64(max(steps[i].connected, 1))
		if err := floor(&steps[i], rate, dur); err != nil {
			return nil, err
		}
	}
	return steps, nil
}

// measure runs n players for dur and reads the server's counters.
func measure(srv *rtspserver.Server, stream *rtsptest.Stream, url string, n int, dur time.Duration) (step, error) {
	st := step{players: n}
	child, res, err := startPlayers(url, n)
	if err != nil {
		return st, err
	}
	defer child.stop()
	time.Sleep(2 * time.Second) // warm-up: every player past its first keyframe
	bytes0, cpu0, drops0, t0 := sessionBytes(srv), cpuSeconds(), stream.Dropped.Load(), time.Now()
	time.Sleep(dur)
	st.seconds = time.Since(t0).Seconds()
	st.bytes, st.cpu, st.drops = sessionBytes(srv)-bytes0, cpuSeconds()-cpu0, stream.Dropped.Load()-drops0
	r := child.result()
	st.connected, st.gaps = res.connected, r.Gaps
	testkit.Within(10*time.Second, func() bool { return len(srv.Sessions()) <= 1 })
	return st, nil
}

func sessionBytes(srv *rtspserver.Server) uint64 {
	var b uint64
	for _, s := range srv.Sessions() {
		if !s.Publishing {
			b += s.Bytes
		}
	}
	return b
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// playersChild is the load process.
type playersChild struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	out   *bufio.Scanner
}

type childResult struct {
	Connected int   `json:"connected"`
	Gaps      int64 `json:"gaps"`
	Bytes     int64 `json:"bytes"`
}

type started struct{ connected int }

func startPlayers(url string, n int) (*playersChild, started, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, started{}, err
	}
	cmd := childCommand(exe, "-role", "players", "-url", url, "-n", strconv.Itoa(n))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, started{}, err
	}
	c := &playersChild{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if !c.out.Scan() {
		c.stop()
		return nil, started{}, errors.New("players: no ready line")
	}
	connected, _ := strconv.Atoi(strings.TrimPrefix(c.out.Text(), "ready "))
	return c, started{connected: connected}, nil
}

// result asks the child to stop and returns its counts.
func (c *playersChild) result() childResult {
	c.stdin.Close()
	var r childResult
	if c.out.Scan() {
		json.Unmarshal(c.out.Bytes(), &r)
	}
	return r
}

func (c *playersChild) stop() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// players is the child: n RTSP players over TCP interleaved that read
// everything and check RTP sequence continuity per channel. It prints
// "ready <connected>" once all are playing and its counts as JSON when its
// stdin closes.
func players(url string, n int) error {
	var wg, attempts sync.WaitGroup
	var connected atomic.Int64
	var gaps, total atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	conns := make(chan net.Conn, n)
	sem := make(chan struct{}, 32) // connect in bounded parallel
	for i := 0; i < n; i++ {
		wg.Add(1)
		attempts.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			conn, r, err := play(url)
			<-sem
			if err != nil {
				attempts.Done()
				fmt.Fprintln(os.Stderr, "player:", err)
				return
			}
			connected.Add(1)
			conns <- conn
			attempts.Done()
			g, b := read(ctx, r)
			gaps.Add(g)
			total.Add(b)
		}()
	}
	attempts.Wait()
	fmt.Printf("ready %d\n", connected.Load())
	os.Stdin.Read(make([]byte, 1)) // until the parent closes stdin
	cancel()
	close(conns)
	for c := range conns {
		c.Close()
	}
	wg.Wait()
	b, _ := json.Marshal(childResult{Connected: int(connected.Load()), Gaps: gaps.Load(), Bytes: total.Load()})
	fmt.Println(string(b))
	return nil
}

// play opens one session and returns the connection positioned at the
// media.
func play(url string) (net.Conn, *rtsp.MessageReader, error) {
	host := strings.TrimPrefix(url, "rtsp://")
	host = host[:strings.IndexByte(host, '/')]
	conn, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	conn.(*net.TCPConn).SetReadBuffer(256 << 10)
	r := rtsp.NewMessageReader(conn)
	w := bufio.NewWriter(conn)
	session := ""
	for i, req := range []*rtsp.Request{
		{Method: rtsp.MethodDescribe, URL: url},
		{Method: rtsp.MethodSetup, URL: url + "/trackID=0", Header: rtsp.Header{{Name: "Transport", Value: "RTP/AVP/TCP;unicast;interleaved=0-1"}}},
		{Method: rtsp.MethodSetup, URL: url + "/trackID=1", Header: rtsp.Header{{Name: "Transport", Value: "RTP/AVP/TCP;unicast;interleaved=2-3"}}},
		{Method: rtsp.MethodPlay, URL: url},
	} {
		req.Header.Add("CSeq", strconv.Itoa(i+1))
		if session != "" {
			req.Header.Add("Session", session)
		}
		req.Write(w)
		if err := w.Flush(); err != nil {
			conn.Close()
			return nil, nil, err
		}
		var m rtsp.Message
		for {
			if err := r.Read(&m); err != nil {
				conn.Close()
				return nil, nil, err
			}
			if m.Response != nil {
				break
			}
		}
		if m.Response.StatusCode != 200 {
			conn.Close()
			return nil, nil, fmt.Errorf("%s: %d", req.Method, m.Response.StatusCode)
		}
		if s := m.Response.Header.Get("Session"); s != "" {
			session, _, _ = strings.Cut(s, ";")
		}
	}
	return conn, r, nil
}

// read consumes media until ctx ends, counting sequence gaps and bytes.
func read(ctx context.Context, r *rtsp.MessageReader) (gaps, bytes int64) {
	var next [4]uint16
	var seen [4]bool
	var m rtsp.Message
	for ctx.Err() == nil {
		if err := r.Read(&m); err != nil {
			return
		}
		if m.Channel < 0 || m.Channel > 3 || len(m.Payload) < 12 {
			continue
		}
		bytes += int64(len(m.Payload))
		if m.Channel%2 == 1 {
			continue // RTCP
		}
		seq := binary.BigEndian.Uint16(m.Payload[2:])
		if seen[m.Channel] && seq != next[m.Channel] {
			gaps++
		}
		seen[m.Channel], next[m.Channel] = true, seq+1
	}
	return
}

// floor measures writing rate bytes/s to st.connected sockets with a bare
// loop, one write per frame: the least any server could spend. The
// readers run in a child process (-role sink), as the players do.
func floor(st *step, rate float64, dur time.Duration) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	n := max(st.connected, 1)
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := childCommand(exe, "-role", "sink", "-url", ln.Addr().String(), "-n", strconv.Itoa(n))
	stdin, _ := cmd.StdinPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
	var conns []net.Conn
	for i := 0; i < n; i++ {
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	chunk := make([]byte, int(rate/25))
	tick := time.NewTicker(40 * time.Millisecond)
	defer tick.Stop()
	cpu0, t0 := cpuSeconds(), time.Now()
	var written uint64
	for time.Since(t0) < dur {
		<-tick.C
		for _, c := range conns {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			if k, err := c.Write(chunk); err == nil {
				written += uint64(k)
			}
		}
	}
	st.floorCPU, st.floorBytes, st.floorConnected = cpuSeconds()-cpu0, written, n
	return nil
}

// sink is the floor's child: n connections to addr that read and discard
// until stdin closes.
func sink(addr string, n int) error {
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		go func() {
			buf := make([]byte, 64<<10)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		}()
	}
	os.Stdin.Read(make([]byte, 1))
	return nil
}

func report(cmd string, dur time.Duration, results [][]step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## RTSP play-out fan-out\n\n")
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s\n- Command: `%s`\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), benchdoc.Machine(), cmd)
	fmt.Fprintf(&b, "- Workload: ffmpeg publishes a 10 s H.264 (x264, GOP 2 s, no B-frames) + AAC clip in a loop in real time into the RTSP server "+
		"(TCP interleaved); `rtsptest.Relay` fans it out to N players over TCP interleaved (DESCRIBE, two SETUPs, PLAY), which run in a child "+
		"process and read everything, checking RTP sequence continuity. Each step warms up 2 s, then measures %s. \"Server CPU\" is this process: "+
		"the RTSP server, the relay and the publisher's depacketising; the players' CPU is not in it. The floor writes the same bytes per player per "+
		"second, one write per frame, to as many loopback sockets from a bare loop; its readers run in a child process too.\n\n", dur)
	for i, steps := range results {
		fmt.Fprintf(&b, "### %s\n\n", profiles[i].name)
		fmt.Fprintf(
			&b,
			"| players | connected | Mbit/s delivered | server cores | server CPU s per GB | floor CPU s per GB | frames dropped | RTP gaps |\n|--:|--:|--:|--:|--:|--:|--:|--:|\n",
		)
		best := 0
		for _, s := range steps {
			gb := float64(s.bytes) / 1e9
			perGB, floorPerGB := 0.0, 0.0
			if gb > 0 {
				perGB = s.cpu / gb
			}
			if s.floorBytes > 0 {
				floorPerGB = s.floorCPU / (float64(s.floorBytes) / 1e9)
			}
			cores := s.cpu / s.seconds
			fmt.Fprintf(&b, "| %d | %d | %.1f | %.2f | %.1f | %.1f | %d | %d |\n", s.players, s.connected,
				float64(s.bytes)*8/s.seconds/1e6, cores, perGB, floorPerGB, s.drops, s.gaps)
			if s.drops == 0 && s.gaps == 0 && s.connected == s.players && cores <= 1 {
				best = s.players
			}
		}
		fmt.Fprintf(&b, "\nLargest N measured with zero dropped frames, every player connected and the server within one core: %d.\n\n", best)
	}
	fmt.Fprintf(&b, "The players and the server share the machine's two cores, so at the larger counts the load generator, not the server, "+
		"is what runs out first; \"server cores\" shows how much headroom the server itself had.\n")
	return b.String()
}

// childCommand starts a helper process that dies with this one, even if
// this one is killed.
func childCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
