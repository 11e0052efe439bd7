package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of /proc CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// cpuUse is the average number of cores in use during a measured window.
type cpuUse struct {
	Valid   bool
	Self    float64 // this process: benchmark clients, and the store itself when in-process
	Server  float64 // the separate server process (etcd), if any
	Machine float64 // all processes on the machine (user+system+irq+steal)
	IOWait  float64 // machine-wide iowait
	Cores   int
	// SelfWrite and ServerWrite are the bytes this process and the server
	// process handed to write system calls in the window (wchar of
	// /proc/PID/io). write_bytes, the page-cache accounting, is no measure
	// on kernels whose page cache uses large folios (ext4 on Linux 6.x):
	// a 24-byte write into a clean 2 MiB folio counts 2 MiB.
	SelfWrite, ServerWrite int64
}

type cpuSample struct {
	at      time.Time
	self    time.Duration
	server  float64 // ticks
	busy    float64 // ticks
	iowait  float64 // ticks
	cores   int
	okProcs bool
	// write_bytes of this process and of the server process
	selfWrite, serverWrite int64
}

func sampleCPU(pid int) cpuSample {
	s := cpuSample{at: time.Now(), okProcs: true}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s.selfWrite = procWriteBytes("self")
	if pid > 0 {
		s.server = procTicks(pid)
		s.serverWrite = procWriteBytes(strconv.Itoa(pid))
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		s.okProcs = false
		return s
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			s.cores++
			continue
		}
		v := make([]float64, len(f))
		for i := 1; i < len(f); i++ {
			v[i], _ = strconv.ParseFloat(f[i], 64)
		}
		// user nice system idle iowait irq softirq steal
		s.busy = v[1] + v[2] + v[3] + v[6] + v[7] + v[8]
		s.iowait = v[5]
	}
	return s
}

// procTicks is utime+stime of pid from /proc/<pid>/stat.
func procTicks(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return u + st
}

// procWriteBytes is wchar of /proc/<pid>/io (pid may be "self"): the bytes
// the process passed to write system calls.
func procWriteBytes(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// measureWindow samples CPU use and raft metrics from from to to.
func measureWindow(ctx context.Context, from, to time.Time, pid int) (cpuUse, map[string]sampleStat) {
	if !sleepUntil(ctx, from) {
		return cpuUse{}, nil
	}
	a := sampleCPU(pid)
	raftMetrics.begin()
	ok := sleepUntil(ctx, to)
	stats := raftMetrics.end()
	b := sampleCPU(pid)
	wall := b.at.Sub(a.at).Seconds()
	if !ok || wall <= 0 || !a.okProcs || !b.okProcs {
		return cpuUse{}, stats
	}
	return cpuUse{
		Valid:   true,
		Self:    (b.self - a.self).Seconds() / wall,
		Server:  (b.server - a.server) / userHZ / wall,
		Machine: (b.busy - a.busy) / userHZ / wall,
		IOWait:  (b.iowait - a.iowait) / userHZ / wall,
		Cores:   b.cores,

		SelfWrite:   b.selfWrite - a.selfWrite,
		ServerWrite: b.serverWrite - a.serverWrite,
	}, stats
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
