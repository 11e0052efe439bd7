// Command storebench measures write throughput and latency of the control
// plane store and compares it with a single-node etcd on the same machine.
//
// Every operation is one single-put Txn (for etcd, one Put) of a 256-byte
// value to a key distinct per writer, /bench/<writer>/<i % 1000>. It runs,
// each with 1 and with 64 concurrent writers (and records the bytes the
// serving process wrote to storage per put, from /proc/PID/io):
//
//   - single:  the embedded raft+SQLite store (raftnode) as one node;
//   - cluster: three raftnode nodes on loopback, writers calling the leader;
//   - etcd:    /usr/bin/etcd started as a child process on 127.0.0.1 with
//     default settings (fsync on), driven with go.etcd.io/etcd/client/v3.
//
// Each run has a 1 s warm-up and then measures for -duration; it reports
// puts/second, p50 and p99 latency of the operations completed in the
// measured window, and the error count. Every case starts from a fresh data
// directory that is removed afterwards. The results are printed and written
// as a delimited section of a markdown file (-out), replacing an earlier
// section of this benchmark. Then it writes -fill puts (64 writers) to a
// fresh single node and to a fresh etcd and reports the size of each data
// directory.
//
// Usage, from the repository root:
//
//	go run ./test/bench/storebench -duration 10s
//	go run ./test/bench/storebench -cases single -cpuprofile /tmp/store.pprof
//	go tool pprof -top -cum -tagfocus writers=64 /tmp/store.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/svcplatform/svc/test/bench/benchdoc"
)

const (
	valueSize  = 256
	keysPerWrt = 1000
	warmup     = 1 * time.Second
)

var writerCounts = []int{1, 64}

var allCases = []string{"single", "cluster", "etcd"}

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the results section to")
	duration := flag.Duration("duration", 10*time.Second, "measured time per run (after a 1s warm-up)")
	cases := flag.String("cases", strings.Join(allCases, ","), "comma-separated subset of cases to run: "+strings.Join(allCases, ","))
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process (all selected cases) to this file")
	fill := flag.Int64("fill", 100000, "puts written to a fresh single node and to etcd before measuring their data directories (0 skips)")
	flag.Parse()

	selected, err := parseCases(*cases)
	if err != nil {
		fmt.Fprintln(os.Stderr, "storebench:", err)
		os.Exit(2)
	}
	if *duration <= 0 {
		fmt.Fprintln(os.Stderr, "storebench: -duration must be positive")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	stopProfile, err := benchdoc.CPUProfile(*cpuprofile)
	if err != nil {
		fatal(err)
	}
	defer stopProfile()

	rep := &report{
		Started:  time.Now().UTC(),
		Command:  commandLine(),
		Duration: *duration,
		Machine:  machineInfo(),
	}
	for _, c := range selected {
		for _, w := range writerCounts {
			if ctx.Err() != nil {
				break
			}
			fmt.Fprintf(os.Stderr, "storebench: %s, %d writer(s), %s ...\n", c, w, *duration)
			var res result
			var err error
			// Label the run so a profile can be narrowed to one case with
			// go tool pprof -tagfocus case=single,writers=64; goroutines the
			// store starts inherit the labels.
			pprof.Do(ctx, pprof.Labels("case", c, "writers", strconv.Itoa(w)), func(ctx context.Context) {
				res, err = runCase(ctx, c, w, *duration, rep)
			})
			if err != nil {
				fmt.Fprintf(os.Stderr, "storebench: %s with %d writer(s) failed: %v\n", c, w, err)
				res = result{Case: c, Writers: w, Failed: err.Error()}
			}
			rep.Results = append(rep.Results, res)
		}
	}
	if *fill > 0 {
		for _, c := range []string{"single", "etcd"} {
			if !slices.Contains(selected, c) || ctx.Err() != nil {
				continue
			}
			fmt.Fprintf(os.Stderr, "storebench: %s, %d puts, then its data directory ...\n", c, *fill)
			rep.Fills = append(rep.Fills, runFill(ctx, c, *fill))
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "storebench: interrupted; not writing", *out)
		return
	}

	fmt.Print(rep.textTable())
	fmt.Println(rep.targetLine())
	fmt.Println(rep.bytesLine())
	fmt.Print(rep.fillText())
	if err := writeSection(*out, rep.markdown()); err != nil {
		fatal(err)
	}
	fmt.Fprintln(os.Stderr, "storebench: wrote", *out)
}

func runCase(ctx context.Context, c string, writers int, d time.Duration, rep *report) (result, error) {
	var (
		t   target
		err error
	)
	switch c {
	case "single":
		t, err = startStore(1)
	case "cluster":
		t, err = startStore(3)
	case "etcd":
		var e *etcdTarget
		e, err = startEtcd(ctx)
		if err == nil {
			rep.EtcdVersion = e.version
			t = e
		}
	}
	if err != nil {
		return result{}, err
	}
	res := runLoad(ctx, t, writers, warmup, d)
	res.Case = c
	if err := t.close(); err != nil {
		fmt.Fprintf(os.Stderr, "storebench: closing %s: %v\n", c, err)
	}
	return res, nil
}

func parseCases(s string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !slices.Contains(allCases, c) {
			return nil, fmt.Errorf("unknown case %q (want some of %s)", c, strings.Join(allCases, ","))
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no cases selected")
	}
	// Keep the canonical order so reports are comparable.
	slices.SortFunc(out, func(a, b string) int { return slices.Index(allCases, a) - slices.Index(allCases, b) })
	return out, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "storebench:", err)
	os.Exit(1)
}
