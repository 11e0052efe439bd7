// Command agentbench measures the node command round trip on one control
// node: an operator creates a command with the API (POST
// /api/v2/nodes/{nodeId}/commands with waitSeconds, which answers once the
// agent's result is stored), an agent long-polling the agent port over
// mTLS runs it and reports the result. The agents are in-process clients,
// each with its own enrolled certificate, running the agent's real command
// executor and journal. It reports p50/p99 with 1 and 50 agents and the
// commands per second sustained, and writes its section of
// docs/benchmarks.md.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/agent/commands"
	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/gcfloor"
	"github.com/svcplatform/svc/shared/pki"
	"github.com/svcplatform/svc/test/bench/benchdoc"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	dur := flag.Duration("duration", 10*time.Second, "length of each measured case")
	agents := flag.Int("agents", 50, "agents connected in the many-agent cases")
	inflight := flag.Int("inflight", 200, "commands in flight in the throughput case")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the sustained-load case to this file")
	blockprofile := flag.String("blockprofile", "", "write a blocking profile of the sustained-load case to this file")
	flag.Parse()
	profiles.cpu, profiles.block = *cpuprofile, *blockprofile
	if err := run(*out, *dur, *agents, *inflight); err != nil {
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		os.Exit(1)
	}
}

func freeAddr() string {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	return ln.Addr().String()
}

type bench struct {
	api, agentURL, token string
	http                 *http.Client
	caPEM                []byte
	dir                  string
}

func run(outPath string, dur time.Duration, nAgents, inflight int) error {
	dir, err := os.MkdirTemp("", "agentbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := config.Defaults()
	cfg.NodeID, cfg.DataDir, cfg.HTTPAddr, cfg.RaftAddr, cfg.AgentAddr, cfg.LogLevel = "bench", filepath.Join(dir, "cp"), freeAddr(), freeAddr(), freeAddr(), "error"
	// The load comes from one address but stands for many hosts and clients.
	cfg.MaxConnectionsPerClient = 1 << 20
	ctx := context.Background()
	// The control node runs in this process: it takes svc's collector floor.
	defer gcfloor.Start(cfg.GCHeapFloorBytes())()
	s, err := server.Start(ctx, cfg, zap.NewNop())
	if err != nil {
		return err
	}
	defer s.Shutdown()
	ca, err := (&clusterca.Authority{Store: s.Node, Keys: s.Keys}).Wait(ctx)
	if err != nil {
		return err
	}
	tok, err := benchdoc.WriteToken(ctx, s.Node, apitoken.Record{TokenID: "bench", Name: "bench", OwnerUserID: "bench",
		Permissions: []string{"*"}, AllowedIPs: []string{"127.0.0.0/8"}})
	if err != nil {
		return err
	}
	b := &bench{api: "http://" + s.HTTPAddr, agentURL: cfg.AgentURL(), token: tok, caPEM: ca.CertPEM, dir: dir,
		http: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}}

	// Enroll the agents through the real enrollment path and start them.
	actx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	ids := make([]string, nAgents)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%02d", i)
		ex, err := b.agent(ids[i], filepath.Join(dir, ids[i]))
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() { defer wg.Done(); ex.Run(actx) }()
	}
	// Warm up: every agent answers once.
	for _, id := range ids {
		if _, err := b.roundTrip(id); err != nil {
			return fmt.Errorf("warm-up on %s: %w", id, err)
		}
	}
	one, err := b.measure(ids[:1], 1, dur)
	if err != nil {
		return err
	}
	many, err := b.measure(ids, nAgents, dur)
	if err != nil {
		return err
	}
	stopProfiles := startProfiles()
	load, err := b.measure(ids, inflight, dur)
	stopProfiles()
	if err != nil {
		return err
	}
	cmd := fmt.Sprintf("go run ./test/bench/agentbench -duration %s -agents %d -inflight %d", dur, nAgents, inflight)
	section := report(cmd, nAgents, inflight, one, many, load)
	fmt.Print(section)
	return benchdoc.WriteSection(outPath, "agentbench", section)
}

// agent enrolls an in-process agent and returns its executor.
func (b *bench) agent(nodeID, dir string) (*commands.Executor, error) {
	var en struct{ Code string }
	if err := b.call("POST", "/api/v2/system/lifecycle/agents/"+nodeID+"/enrollment", map[string]any{}, &en); err != nil {
		return nil, err
	}
	key, _ := pki.NewKey()
	csr, _ := pki.NewCSR(key, nodeID)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.caPEM)
	pinned := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body, _ := json.Marshal(agentapi.EnrollRequest{Code: en.Code, CSR: string(csr), Hostname: "bench", AgentVersion: "bench"})
	resp, err := pinned.Post(b.agentURL+agentapi.PathEnroll, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	var er agentapi.EnrollResponse
	json.NewDecoder(resp.Body).Decode(&er)
	resp.Body.Close()
	keyPEM, _ := pki.EncodeKey(key)
	pair, err := tls.X509KeyPair([]byte(er.Certificate), keyPEM)
	if err != nil {
		return nil, fmt.Errorf("enrolling %s: %w", nodeID, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	j, err := commands.OpenJournal(filepath.Join(dir, "journal"))
	if err != nil {
		return nil, err
	}
	c := &agentClient{base: b.agentURL, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64,
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}}
	return &commands.Executor{Client: c, Journal: j, Log: zap.NewNop(), PollWait: 20 * time.Second,
		Handlers: map[string]commands.Handler{agentapi.TypePing: func(context.Context, json.RawMessage) (any, error) {
			return agentapi.PingResult{NodeID: nodeID, AgentVersion: "bench", Time: time.Now().UTC()}, nil
		}}}, nil
}

// agentClient is the agent's side of the agent port.
type agentClient struct {
	base string
	http *http.Client
}

func (c *agentClient) Post(ctx context.Context, path string, v, out any) error {
	body, _ := json.Marshal(v)
	req, _ := http.NewRequestWithContext(ctx, "POST", c.base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d %s", path, resp.StatusCode, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func (b *bench) call(method, path string, body, out any) error {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, b.api+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// roundTrip creates a ping for a node and returns once its result is stored.
func (b *bench) roundTrip(nodeID string) (time.Duration, error) {
	var cmd struct{ Status string }
	t0 := time.Now()
	if err := b.call("POST", "/api/v2/nodes/"+nodeID+"/commands", map[string]any{"commandType": agentapi.TypePing, "waitSeconds": 30}, &cmd); err != nil {
		return 0, err
	}
	if cmd.Status != "Succeeded" {
		return 0, fmt.Errorf("command ended %s", cmd.Status)
	}
	return time.Since(t0), nil
}

type result struct {
	agents, inflight int
	n                int
	p50, p99, max    time.Duration
	perSecond        float64
	cpu              float64 // cores used by this process
}

// measure keeps inflight round trips going over the agents for dur.
func (b *bench) measure(ids []string, inflight int, dur time.Duration) (result, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var failed atomic.Value
	deadline := time.Now().Add(dur)
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < inflight; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				d, err := b.roundTrip(ids[w%len(ids)])
				if err != nil {
					failed.Store(err)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		return result{}, err
	}
	if len(lat) == 0 {
		return result{}, errors.New("no round trip finished")
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return result{agents: len(ids), inflight: inflight, n: len(lat), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], max: lat[len(lat)-1],
		perSecond: float64(len(lat)) / elapsed.Seconds(), cpu: (cpuTime() - cpu0).Seconds() / elapsed.Seconds()}, nil
}

// cpuTime is the CPU this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's 1/5/15-minute load, which says how much of
// the two cores other work took during the run.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func report(cmd string, agents, inflight int, one, many, load result) string {
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISS"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Node command round trip\n\n")
	fmt.Fprintf(
		&b,
		"- Date: %s\n- Machine: %s (load average when the run ended: %s)\n- Command: `%s`\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		benchdoc.Machine(),
		loadAverage(),
		cmd,
	)
	fmt.Fprintf(&b, "- Workload: one control node (single-node store) and in-process agents, each enrolled with a one-time code and holding its own "+
		"certificate, running the agent's command executor and journal and long-polling the agent port over mTLS on loopback. A round trip "+
		"is `POST /api/v2/nodes/{nodeId}/commands` (`agent.ping`, `waitSeconds`) through the API guard until the answer carries the stored "+
		"result: create (with its audit record), claim by the agent's long poll, result; three replicated writes. Latency is per command as "+
		"the API caller sees it.\n\n")
	fmt.Fprintf(
		&b,
		"| case | agents | in flight | commands | per second | p50 ms | p99 ms | max ms | process CPU (cores) | CPU µs per command |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
	)
	for _, r := range []struct {
		name string
		r    result
	}{{"one agent, one command at a time", one}, {"many agents, one command each", many}, {"sustained load", load}} {
		fmt.Fprintf(
			&b,
			"| %s | %d | %d | %d | %.0f | %s | %s | %s | %.2f | %.0f |\n",
			r.name,
			r.r.agents,
			r.r.inflight,
			r.r.n,
			r.r.perSecond,
			ms(r.r.p50),
			ms(r.r.p99),
			ms(r.r.max),
			r.r.cpu,
			r.r.cpu*1e6/r.r.perSecond,
		)
	}
	fmt.Fprintf(&b, "\nTargets: p99 under 100 ms with %d agents: %s ms (%s); at least 1,000 commands/s sustained: %.0f (%s).\n\n",
		agents, ms(many.p99), verdict(many.p99 < 100*time.Millisecond), load.perSecond, verdict(load.perSecond >= 1000))
	fmt.Fprintf(&b, "The API callers, the agents and the control node are this one process on the machine's two cores, so the per-second "+
		"figure is a floor for the control node alone, and it moves with whatever else the shared machine runs (the load average above; "+
		"the CPU per command is the steadier figure). At %.1f ms of CPU per command in the sustained case, all of it counted, the "+
		"machine's %d cores, free of other work, would carry about %.0f commands/s.\n\n", load.cpu/load.perSecond*1000, runtime.NumCPU(),
		float64(runtime.NumCPU())*load.perSecond/load.cpu)
	fmt.Fprintf(&b, "### What limits it\n\nFrom CPU profiles of the sustained case (`-cpuprofile FILE`, then `go tool pprof -top -cum FILE`), "+
		"November 2026: the state machine applying the writes is about 35-40%% of the process's CPU and runs on one goroutine, so at "+
		"about 1,000 commands/s (3,000 Txns/s plus audit records) it is busy about 60%% of the time and sets the ceiling; a third of it is "+
		"SQLite's WAL commit, the rest the record, its history row and five index b-trees per write. JSON is about 12%%, the API guard "+
		"(authentication, permission and validation against the contract) about 8%%, reads of the local SQLite state about 11%%. The node "+
		"record an agent request is checked against and the API token are cached until a node record, or a token, user or role, changes "+
		"(the store keeps a revision per key area); before that they were read again after every write, which held the many-agents case "+
		"near 560 commands/s. A waiting caller never reads the command back (its changes come with the watch), and a long poll claims new "+
		"commands from the watch's queue instead of the index.\n")
	return b.String()
}

var profiles struct{ cpu, block string }

// startProfiles starts the asked-for profiles and returns what ends them.
func startProfiles() func() {
	stopCPU, _ := benchdoc.CPUProfile(profiles.cpu)
	if profiles.block != "" {
		runtime.SetBlockProfileRate(int(time.Microsecond))
		runtime.SetMutexProfileFraction(5)
	}
	return func() {
		stopCPU()
		if profiles.block != "" {
			bf, _ := os.Create(profiles.block)
			pprof.Lookup("block").WriteTo(bf, 0)
			bf.Close()
			mf, _ := os.Create(profiles.block + ".mutex")
			pprof.Lookup("mutex").WriteTo(mf, 0)
			mf.Close()
		}
	}
}
