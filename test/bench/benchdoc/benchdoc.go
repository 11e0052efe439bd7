// Package benchdoc is what the benchmark programs share: a control node to
// measure with an API token, the machine line of a report, a CPU profile of
// a measured phase, and writing a program's own section of
// docs/benchmarks.md between its markers.
package benchdoc

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strings"
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
	cfg.NodeID, cfg.DataDir, cfg.HTTPAddr, cfg.RaftAddr, cfg.LogLevel = "bench", dir, FreeAddr(), FreeAddr(), "error"
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
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
