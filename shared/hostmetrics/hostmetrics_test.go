package hostmetrics

import (
	"os"
	"testing"
	"time"
)

func TestSamplesThisHost(t *testing.T) {
	s := New()
	ctx := t.Context()
	first := s.Host(ctx)
	time.Sleep(200 * time.Millisecond)
	m := s.Host(ctx)
	if m.CPUCores < 1 || m.MemTotalBytes == 0 || m.MemUsedBytes == 0 || m.MemPercent <= 0 || m.UptimeSeconds == 0 {
		t.Fatalf("host figures missing: %+v", m)
	}
	if len(m.Disks) == 0 || m.Disks[0].TotalBytes == 0 {
		t.Fatalf("no file system: %+v (first %+v)", m.Disks, first.Disks)
	}
	lo := false
	for _, i := range m.Interfaces {
		lo = lo || i.Name == "lo"
	}
	if !lo {
		t.Fatalf("loopback interface missing: %+v", m.Interfaces)
	}
	rss, _, ok := s.Process(ctx, os.Getpid())
	if !ok || rss == 0 {
		t.Fatalf("own process: rss %d ok %v", rss, ok)
	}
	if _, _, ok := s.Process(ctx, 1<<30); ok {
		t.Fatal("a process that does not exist was measured")
	}
	if n := OpenFiles(ctx, os.Getpid()); n < 3 {
		t.Fatalf("open files %d", n)
	}
}
