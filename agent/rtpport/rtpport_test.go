package rtpport

import (
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/agentapi"
)

// freeRange finds size consecutive ports that are free now, below the
// kernel's ephemeral range (32768 up by default), where concurrently
// running tests' outgoing connections would take ports at random.
func freeRange(t *testing.T, from, size int) int {
	t.Helper()
	for start := from; start+size < 32768; start += size {
		ok := true
		for p := start; p < start+size && ok; p += 37 {
			ok = PortFree(p)
		}
		if ok {
			return start
		}
	}
	t.Fatal("no free port range")
	return 0
}

// TestThousandConcurrentLeases: 1,000 concurrent lease requests get 1,000
// distinct ports, none of them one that another socket on the host holds.
func TestThousandConcurrentLeases(t *testing.T) {
	const n, taken = 1000, 100
	start := freeRange(t, 20000, n+taken+300)
	lo, hi := start, start+n+taken+299
	// Another program holds every 11th port: UDP on some, TCP on others.
	busy := map[int]bool{}
	for i := 0; len(busy) < taken; i += 11 {
		p := lo + i
		if i%2 == 0 {
			c, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				continue
			}
			defer c.Close()
		} else {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				continue
			}
			defer l.Close()
		}
		busy[p] = true
	}
	m, err := Open("media-1", lo, hi, filepath.Join(t.TempDir(), "leases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	leases := make([]agentapi.Lease, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			leases[i], errs[i] = m.Lease(agentapi.LeaseRequest{Direction: agentapi.DirectionReceive, Purpose: "gb28181-live", SSRC: strconv.Itoa(i), TTLSeconds: 60})
		}(i)
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, l := range leases {
		if errs[i] != nil {
			t.Fatalf("lease %d: %v", i, errs[i])
		}
		if seen[l.Port] {
			t.Fatalf("port %d handed out twice", l.Port)
		}
		if busy[l.Port] {
			t.Fatalf("port %d is in use on the host but was leased", l.Port)
		}
		if l.Port < lo || l.Port > hi {
			t.Fatalf("port %d outside %d-%d", l.Port, lo, hi)
		}
		seen[l.Port] = true
	}
	if len(seen) != n || m.Active() != n {
		t.Fatalf("%d distinct ports, %d active", len(seen), m.Active())
	}
}

func TestLeaseReleaseExpireAndPersist(t *testing.T) {
	start := freeRange(t, 24000, 8)
	path := filepath.Join(t.TempDir(), "leases.json")
	m, _ := Open("media-1", start, start+3, path)
	now := time.Now()
	m.now = func() time.Time { return now }
	a, err := m.Lease(agentapi.LeaseRequest{Direction: agentapi.DirectionReceive, Purpose: "p", TTLSeconds: 10})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.Lease(agentapi.LeaseRequest{Direction: agentapi.DirectionSend, Purpose: "p", TTLSeconds: 3600, Port: start + 3})
	if b.Port != start+3 {
		t.Fatalf("asked-for port: %+v", b)
	}
	if _, err := m.Lease(agentapi.LeaseRequest{Direction: agentapi.DirectionSend, Purpose: "p", Port: start + 3}); !errors.Is(err, ErrTaken) {
		t.Fatalf("same port twice: %v", err)
	}
	for _, bad := range []agentapi.LeaseRequest{{Direction: "sideways", Purpose: "p"}, {Direction: "send"},
		{Direction: "send", Purpose: "p", TTLSeconds: 1}, {Direction: "send", Purpose: "p", Port: 80}} {
		if _, err := m.Lease(bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	// Release by port with the wrong direction finds nothing; with the
	// right one it ends the lease.
	if _, err := m.Release(agentapi.ReleaseRequest{Port: b.Port, Direction: agentapi.DirectionReceive}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("wrong direction: %v", err)
	}
	if r, err := m.Release(agentapi.ReleaseRequest{Port: b.Port, Direction: agentapi.DirectionSend, Reason: "stream ended"}); err != nil || r.Status != agentapi.LeaseReleased {
		t.Fatalf("release by port: %+v %v", r, err)
	}
	// A restarted agent knows the remaining lease.
	m2, err := Open("media-1", start, start+3, path)
	if err != nil || m2.Active() != 1 {
		t.Fatalf("after reopen: %d active, %v", m2.Active(), err)
	}
	// Past its expiry the lease is reclaimed.
	now = now.Add(11 * time.Second)
	m.Reclaim()
	list := m.List(agentapi.LeaseExpired, "")
	if m.Active() != 0 || len(list.Leases) != 1 || list.Leases[0].LeaseID != a.LeaseID {
		t.Fatalf("expired: active %d list %+v", m.Active(), list)
	}
	if l := m.List("", agentapi.DirectionSend); len(l.Leases) != 1 || l.Leases[0].Status != agentapi.LeaseReleased {
		t.Fatalf("send leases: %+v", l)
	}
	// Exhaustion is reported, not looped on.
	for i := 0; i < 4; i++ {
		if _, err := m.Lease(agentapi.LeaseRequest{Direction: agentapi.DirectionReceive, Purpose: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Lease(agentapi.LeaseRequest{Direction: agentapi.DirectionReceive, Purpose: "p"}); !errors.Is(err, ErrExhausted) {
		t.Fatalf("full range: %v", err)
	}
}
