package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	beginMarker = "<!-- storebench:begin -->"
	endMarker   = "<!-- storebench:end -->"
)

type report struct {
	Started     time.Time
	Command     string
	Duration    time.Duration
	Machine     string
	EtcdVersion string
	Results     []result
	Fills       []fillResult
}

func (r *report) find(c string, writers int) (result, bool) {
	for _, res := range r.Results {
		if res.Case == c && res.Writers == writers && res.Failed == "" {
			return res, true
		}
	}
	return result{}, false
}

func (r *report) caseLabel(c string) string {
	switch c {
	case "single":
		return "store, 1 node"
	case "cluster":
		return "store, 3 nodes (loopback)"
	case "etcd":
		v := r.EtcdVersion
		if v == "" {
			v = "?"
		}
		return "etcd " + v + ", 1 node"
	}
	return c
}

func (r *report) rows() [][]string {
	var rows [][]string
	for _, res := range r.Results {
		if res.Failed != "" {
			rows = append(rows, []string{r.caseLabel(res.Case), strconv.Itoa(res.Writers), "failed", "-", "-", "-", "-"})
			continue
		}
		rows = append(rows, []string{
			r.caseLabel(res.Case), strconv.Itoa(res.Writers),
			fmt.Sprintf("%.0f", res.putsPerSec()),
			fmt.Sprintf("%.2f", ms(res.P50)), fmt.Sprintf("%.2f", ms(res.P99)),
			strconv.Itoa(res.Errors), res.writtenPerPut(),
		})
	}
	return rows
}

var header = []string{"case", "writers", "puts/s", "p50 ms", "p99 ms", "errors", "bytes written per put"}

// writtenPerPut is what the serving process wrote to storage per put in the
// measured window ("-" when it could not be measured).
func (r result) writtenPerPut() string {
	if !r.CPU.Valid || r.Ops == 0 {
		return "-"
	}
	return strconv.FormatInt(r.bytesPerPut(), 10)
}

// bytesPerPut counts the store's own process, or etcd's.
func (r result) bytesPerPut() int64 {
	if r.Ops == 0 {
		return 0
	}
	w := r.CPU.SelfWrite
	if r.Case == "etcd" {
		w = r.CPU.ServerWrite
	}
	return w / int64(r.Ops)
}

func (r *report) textTable() string {
	rows := append([][]string{header}, r.rows()...)
	width := make([]int, len(header))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, c := range row {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(&b, "  %*s", width[i], c)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// targetLine compares the single node with etcd at 64 writers.
func (r *report) targetLine() string {
	const prefix = "single node at 64 writers vs etcd at 64 writers: "
	s, ok1 := r.find("single", 64)
	e, ok2 := r.find("etcd", 64)
	if !ok1 || !ok2 || e.putsPerSec() == 0 || e.P99 == 0 {
		return prefix + "not computed (needs successful single and etcd runs at 64 writers)"
	}
	tr := s.putsPerSec() / e.putsPerSec()
	pr := float64(s.P99) / float64(e.P99)
	return fmt.Sprintf("%sthroughput ratio %.2f (target >= 1.0) %s, p99 ratio %.2f (target <= 2.0) %s",
		prefix, tr, passMiss(tr >= 1.0), pr, passMiss(pr <= 2.0))
}

// bytesLine compares the bytes the single node and etcd write per put.
func (r *report) bytesLine() string {
	var parts []string
	for _, w := range writerCounts {
		s, ok1 := r.find("single", w)
		e, ok2 := r.find("etcd", w)
		if !ok1 || !ok2 || !s.CPU.Valid || !e.CPU.Valid || e.bytesPerPut() == 0 {
			continue
		}
		ratio := float64(s.bytesPerPut()) / float64(e.bytesPerPut())
		parts = append(parts, fmt.Sprintf("%d writer(s): %d vs %d bytes, ratio %.2f (target <= 2.0) %s", w, s.bytesPerPut(), e.bytesPerPut(), ratio, passMiss(ratio <= 2.0)))
	}
	if len(parts) == 0 {
		return "bytes written per put, single node vs etcd: not computed (needs single and etcd runs)"
	}
	return "bytes written per put, single node vs etcd: " + strings.Join(parts, "; ")
}

// fillText is the data-directory table, as text.
func (r *report) fillText() string {
	var b strings.Builder
	for _, f := range r.Fills {
		if f.Failed != "" {
			fmt.Fprintf(&b, "%s after %d puts: failed: %s\n", r.caseLabel(f.Case), f.Puts, f.Failed)
			continue
		}
		fmt.Fprintf(&b, "%s after %d puts: %.1f MiB allocated (%d bytes per put), files %.1f MiB, in %s; %s\n", r.caseLabel(f.Case), f.Puts,
			float64(f.Allocated)/(1<<20), f.Allocated/f.Puts, float64(f.Size)/(1<<20), f.Took.Round(time.Second), partsText(f.Parts))
	}
	return b.String()
}

func (r *report) fillMarkdown(w *strings.Builder) {
	if len(r.Fills) == 0 {
		return
	}
	fmt.Fprintf(w, "On-disk size of a fresh data directory after %d puts from %d writers (same keys as the 64-writer runs: 64,000 distinct keys); "+
		"allocated counts preallocated raft-wal and etcd WAL segments in full, files is what the files hold:\n\n", r.Fills[0].Puts, fillWriters)
	fmt.Fprintln(w, "| case | puts | allocated MiB | allocated bytes per put | files MiB | took | where (allocated MiB) |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|---|")
	for _, f := range r.Fills {
		if f.Failed != "" {
			fmt.Fprintf(w, "| %s | %d | failed: %s | | | | |\n", r.caseLabel(f.Case), f.Puts, oneLine(f.Failed))
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %d | %.1f | %s | %s |\n", r.caseLabel(f.Case), f.Puts, float64(f.Allocated)/(1<<20), f.Allocated/f.Puts,
			float64(f.Size)/(1<<20), f.Took.Round(time.Second), partsText(f.Parts))
	}
	fmt.Fprintln(w)
}

// partsText lists the parts of a data directory, largest first.
func partsText(parts map[string]int64) string {
	names := make([]string, 0, len(parts))
	for n, b := range parts {
		if b >= 1<<20 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return parts[names[i]] > parts[names[j]] })
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%s %.1f", n, float64(parts[n])/(1<<20))
	}
	return strings.Join(out, ", ")
}

func passMiss(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintln(&b, beginMarker)
	fmt.Fprintln(&b, "## Store: Txn puts")
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "- Date: %s\n", r.Started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- Machine: %s\n", r.Machine)
	if r.EtcdVersion != "" {
		fmt.Fprintf(&b, "- etcd: %s (%s, Debian etcd-server, default settings, fsync on)\n", r.EtcdVersion, etcdBinary)
	}
	fmt.Fprintf(&b, "- Command: `%s`\n", r.Command)
	fmt.Fprintf(&b, "- Workload: each operation is one single-put Txn (etcd: one `Put` through go.etcd.io/etcd/client/v3, one client connection) "+
		"of a %d-byte value to `/bench/<writer>/<i %% %d>`; every case starts from an empty data directory in %s; "+
		"1 s warm-up, then %s measured; latency is per operation as seen by the caller. "+
		"The 3-node cluster runs all nodes in this process and the writers call the leader.\n",
		valueSize, keysPerWrt, os.TempDir(), r.Duration)
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| "+strings.Join(header, " | ")+" |")
	fmt.Fprintln(&b, "|---|--:|--:|--:|--:|--:|--:|")
	for _, row := range r.rows() {
		fmt.Fprintln(&b, "| "+strings.Join(row, " | ")+" |")
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "Target: "+r.targetLine()+".")
	fmt.Fprintln(&b)
	fmt.Fprintln(
		&b,
		"gRPC answers it sends its clients. The 3-node case counts its three replicas. The kernel's own count of bytes sent to storage "+
			"(write_bytes) is not used: with large page-cache folios (ext4 on this kernel) a 24-byte write into a clean folio counts the whole folio, up to 2 MiB.",
	)
	fmt.Fprintln(&b)
	r.fillMarkdown(&b)
	for _, res := range r.Results {
		if res.Failed != "" {
			fmt.Fprintf(&b, "\n%s with %d writers failed to run: `%s`\n", r.caseLabel(res.Case), res.Writers, oneLine(res.Failed))
		} else if res.Errors > 0 {
			fmt.Fprintf(&b, "\n%s with %d writers: %d errors, first: `%s`\n", r.caseLabel(res.Case), res.Writers, res.Errors, oneLine(res.FirstErr))
		}
	}
	fmt.Fprintln(&b)
	r.writeLimits(&b)
	fmt.Fprintln(&b, endMarker)
	return b.String()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "`", "'")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// writeSection replaces the delimited section in path, or appends it.
func writeSection(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s := string(old)
	var out string
	begin := strings.Index(s, beginMarker)
	switch {
	case begin >= 0:
		end := strings.Index(s[begin:], endMarker)
		if end < 0 {
			return fmt.Errorf("%s has %q without %q; fix the file by hand", path, beginMarker, endMarker)
		}
		out = s[:begin] + strings.TrimSuffix(section, "\n") + s[begin+end+len(endMarker):]
	case len(s) == 0:
		out = "# Benchmarks\n\n" + section
	default:
		out = strings.TrimRight(s, "\n") + "\n\n" + section
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

func machineInfo() string {
	cpu := "unknown CPU"
	if v := procField("/proc/cpuinfo", "model name"); v != "" {
		cpu = v
	}
	mem := "unknown memory"
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		if kb, err := strconv.ParseFloat(strings.Fields(v)[0], 64); err == nil {
			mem = fmt.Sprintf("%.1f GiB RAM", kb/(1<<20))
		}
	}
	kernel := "unknown kernel"
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		kernel = utsString(u.Sysname[:]) + " " + utsString(u.Release[:]) + " " + utsString(u.Machine[:])
	}
	return fmt.Sprintf("%s, %d cores, %s, %s, %s", cpu, runtime.NumCPU(), mem, kernel, runtime.Version())
}

func utsString(b []int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

// procField returns the value of the first "key : value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// commandLine reconstructs how the benchmark was invoked; under `go run` the
// binary lives in a temporary build directory.
func commandLine() string {
	prog := os.Args[0]
	if strings.Contains(prog, "go-build") || strings.HasPrefix(prog, os.TempDir()) {
		prog = "go run ./test/bench/storebench"
	}
	parts := []string{prog}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
