// Package benchdoc is what the benchmark programs share: a control node to
// measure with an API token, the machine line of a report, how often the
// machine pauses a running thread, a CPU profile of a measured phase, and
// writing a program's own section of docs/benchmarks.md between its markers.
package benchdoc

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/controlplane/store"
)

// FreeAddr is a loopback address with a free port.
func FreeAddr() string {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	return ln.Addr().String()
}

// Node starts a single control node in a temporary directory, waits for
// its leadership and stores an API token with perms (from loopback only
// when loopbackOnly). Stop shuts it down and removes the directory.
func Node(ctx context.Context, name string, loopbackOnly bool, perms ...string) (s *server.Server, token string, stop func(), err error) {
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return nil, "", nil, err
	}
	cfg := config.Defaults()
	// Ports the system picks (the server reports them): nothing else on the
	// machine can take one first, and two benchmarks can run side by side.
	cfg.NodeID, cfg.DataDir, cfg.HTTPAddr, cfg.RaftAddr, cfg.AgentAddr, cfg.LogLevel = "bench", dir, "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "error"
	// The load comes from one address but stands for many hosts and clients.
	cfg.MaxConnectionsPerClient = 1 << 20
	if s, err = server.Start(ctx, cfg, zap.NewNop()); err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	stop = func() {
		s.Shutdown()
		os.RemoveAll(dir)
	}
	for !s.Node.Leadership().IsLeader() {
		time.Sleep(20 * time.Millisecond)
	}
	token, _ = apitoken.New()
	rec := apitoken.Record{TokenID: "bench", Name: "bench", OwnerUserID: "bench", Digest: apitoken.Digest(token),
		TokenPrefix: token[:12], Permissions: perms, CreatedAt: time.Now()}
	if loopbackOnly {
		rec.AllowedIPs = []string{"127.0.0.0/8"}
	}
	op, _ := apitoken.Put(rec)
	if _, err := s.Node.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
		stop()
		return nil, "", nil, err
	}
	return s, token, stop, nil
}

// Machine describes the CPU, cores and Go version for a report.
func Machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.+)`).FindStringSubmatch(string(b)); m != nil {
			model = strings.TrimSpace(m[1])
		}
	}
	return fmt.Sprintf("%s, %d cores, %s", model, runtime.NumCPU(), runtime.Version())
}

// Verdict is PASS or MISS.
func Verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// WriteSection replaces the section of program name in the markdown file
// at path (between <!-- name:begin --> and <!-- name:end -->), or appends
// it.
func WriteSection(path, name, section string) error {
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	body := begin + "\n" + section + end + "\n"
	old, _ := os.ReadFile(path)
	s := string(old)
	if i, j := strings.Index(s, begin), strings.Index(s, end); i >= 0 && j > i {
		s = s[:i] + body + s[j+len(end)+1:]
	} else {
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			s += "\n"
		}
		s += body
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// CPUProfile starts a CPU profile written to path and returns what stops
// it (and closes the file); with an empty path it does nothing. The
// returned stop is never nil.
func CPUProfile(path string) (stop func(), err error) {
	return record(path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// ExecutionTrace starts a runtime execution trace written to path and
// returns what stops it; with an empty path it does nothing. The trace
// shows what each goroutine waited for (go tool trace -pprof=sched), which
// a CPU profile cannot: a latency tail is mostly time not running.
func ExecutionTrace(path string) (stop func(), err error) {
	return record(path, trace.Start, trace.Stop)
}

// record runs a recorder (a profile, a trace) into the file at path until
// the returned stop, which is never nil; an empty path records nothing.
func record(path string, start func(io.Writer) error, end func()) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}, err
	}
	if err := start(f); err != nil {
		f.Close()
		return func() {}, err
	}
	return func() { end(); f.Close() }, nil
}

// Pauses is what HostPauses saw.
type Pauses struct {
	CPUs         int
	Window       time.Duration
	Count        int           // gaps over a millisecond, all CPUs together
	Total, Max   time.Duration // their sum and the longest
	Simultaneous int           // gaps that overlapped one on another CPU
}

func (p Pauses) String() string {
	return fmt.Sprintf("with a busy thread on each of the %d CPUs and nothing else running, %d pauses over 1 ms in %s (%s in all, longest %s; %d of them on two CPUs at once)",
		p.CPUs, p.Count, p.Window, p.Total.Round(100*time.Microsecond), p.Max.Round(100*time.Microsecond), p.Simultaneous)
}

// HostPauses measures how often the machine stops a running thread: one
// thread per CPU reads the clock in a loop for window, and every gap over a
// millisecond between two reads is a moment that thread was not running
// although it had work (the host took the virtual CPU, or the kernel ran
// something else). Latency percentiles measured on the machine cannot be
// steadier than this. Call it while nothing else runs.
func HostPauses(window time.Duration) Pauses {
	type gap struct{ at, d time.Duration }
	n := runtime.NumCPU()
	gaps := make([][]gap, n)
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < n; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			last := time.Since(start)
			for last < window {
				now := time.Since(start)
				if d := now - last; d > time.Millisecond {
					gaps[c] = append(gaps[c], gap{last, d})
				}
				last = now
			}
		}()
	}
	wg.Wait()
	p := Pauses{CPUs: n, Window: window}
	for c, gs := range gaps {
		for _, g := range gs {
			p.Count++
			p.Total += g.d
			p.Max = max(p.Max, g.d)
		overlap:
			for o, other := range gaps {
				if o == c {
					continue
				}
				for _, h := range other {
					if g.at < h.at+h.d && h.at < g.at+g.d {
						p.Simultaneous++
						break overlap
					}
				}
			}
		}
	}
	return p
}
