// Package rtpport owns a media host's RTP port range: it leases ports for
// a direction and purpose (GB28181 PS streams, RTP sends) with an expiry,
// checks at lease time that the port is really free on the host (it binds
// UDP and TCP on it and lets go), never hands a leased port out twice,
// releases by lease or by port, and reclaims expired leases. Leases are
// kept in a file, so an agent restart does not forget them.
package rtpport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/agent/atomicfile"
	"github.com/svcplatform/svc/shared/agentapi"
)

// Sentinel errors; the command handlers map them to agentapi codes.
var (
	ErrExhausted = errors.New("no free port left in the RTP range")
	ErrInvalid   = errors.New("invalid lease request")
	ErrNotFound  = errors.New("no such active lease")
	ErrTaken     = errors.New("the port is leased or in use on the host")
)

// Limits of a lease.
const (
	DefaultTTL   = 5 * time.Minute
	MinTTL       = 10 * time.Second
	MaxTTL       = 24 * time.Hour
	historyLimit = 1000
)

// Manager leases the ports of one range.
type Manager struct {
	nodeID   string
	min, max int
	path     string
	now      func() time.Time
	// Free checks a port on the host; tests may narrow it.
	free func(port int) bool

	mu      sync.Mutex
	active  map[int]*agentapi.Lease
	history []agentapi.Lease // ended leases, newest last
	next    int
	changes uint64 // counts changes to active, under mu

	// Group commit: one caller writes the file for every change made up
	// to then, the others wait for a write that covers theirs.
	smu      sync.Mutex
	saved    uint64
	flushing bool
	flushed  *sync.Cond
}

// Open loads the leases kept at path for the range lo..hi.
func Open(nodeID string, lo, hi int, path string) (*Manager, error) {
	if lo < 1024 || hi > 65535 || lo > hi {
		return nil, fmt.Errorf("%w: range %d-%d", ErrInvalid, lo, hi)
	}
	m := &Manager{nodeID: nodeID, min: lo, max: hi, path: path, now: time.Now, free: PortFree, active: map[int]*agentapi.Lease{}, next: lo}
	m.flushed = sync.NewCond(&m.smu)
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		var saved []agentapi.Lease
		if err := json.Unmarshal(raw, &saved); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for i := range saved {
			l := saved[i]
			// A changed range keeps leases outside it until they end: the
			// engine may still use them.
			m.active[l.Port] = &l
		}
	}
	return m, nil
}

// Range is the managed port range.
func (m *Manager) Range() (int, int) { return m.min, m.max }

// PortFree reports whether nothing on the host uses port for UDP or TCP,
// by binding both on every address and letting go at once.
func PortFree(port int) bool {
	addr := ":" + strconv.Itoa(port)
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	t, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	t.Close()
	return true
}

// Lease hands out a port of the range that no lease holds and nothing on
// the host uses, or the asked-for port when it qualifies.
func (m *Manager) Lease(req agentapi.LeaseRequest) (agentapi.Lease, error) {
	if req.Direction != agentapi.DirectionReceive && req.Direction != agentapi.DirectionSend {
		return agentapi.Lease{}, fmt.Errorf("%w: direction must be receive or send", ErrInvalid)
	}
	if req.Purpose == "" || len(req.Purpose) > 64 || len(req.SSRC) > 32 || len(req.StreamID) > 256 {
		return agentapi.Lease{}, fmt.Errorf("%w: purpose is required (1-64 characters); ssrc and streamId are bounded", ErrInvalid)
	}
	ttl := time.Duration(req.TTLSeconds) * time.Second
	if req.TTLSeconds == 0 {
		ttl = DefaultTTL
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return agentapi.Lease{}, fmt.Errorf("%w: ttlSeconds must be within %d..%d", ErrInvalid, int(MinTTL.Seconds()), int(MaxTTL.Seconds()))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reclaimLocked()
	port := 0
	if req.Port != 0 {
		if req.Port < m.min || req.Port > m.max {
			return agentapi.Lease{}, fmt.Errorf("%w: port %d is outside the range %d-%d", ErrInvalid, req.Port, m.min, m.max)
		}
		if _, held := m.active[req.Port]; held || !m.free(req.Port) {
			return agentapi.Lease{}, fmt.Errorf("%w: %d", ErrTaken, req.Port)
		}
		port = req.Port
	} else {
		size := m.max - m.min + 1
		for i := 0; i < size; i++ {
			p := m.min + (m.next-m.min+i)%size
			if _, held := m.active[p]; held || !m.free(p) {
				continue
			}
			port = p
			break
		}
		if port == 0 {
			return agentapi.Lease{}, fmt.Errorf("%w: %d-%d", ErrExhausted, m.min, m.max)
		}
		// Going round the range spreads ports, so a just-released port is
		// not reused at once by an unrelated stream.
		m.next = port + 1
		if m.next > m.max {
			m.next = m.min
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return agentapi.Lease{}, err
	}
	now := m.now().UTC()
	l := &agentapi.Lease{LeaseID: id.String(), NodeID: m.nodeID, Port: port, Direction: req.Direction, Purpose: req.Purpose, SSRC: req.SSRC,
		StreamID: req.StreamID, Status: agentapi.LeaseActive, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	m.active[port] = l
	m.changes++
	gen := m.changes
	m.mu.Unlock()
	err = m.persist(gen)
	m.mu.Lock()
	if err != nil {
		if m.active[port] == l {
			delete(m.active, port)
		}
		return agentapi.Lease{}, err
	}
	return *l, nil
}

// Release ends a lease by id, or the active lease of a port (only when it
// has the given direction, if one is given).
func (m *Manager) Release(req agentapi.ReleaseRequest) (agentapi.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var l *agentapi.Lease
	switch {
	case req.LeaseID != "":
		for _, a := range m.active {
			if a.LeaseID == req.LeaseID {
				l = a
			}
		}
	case req.Port != 0:
		l = m.active[req.Port]
		if l != nil && req.Direction != "" && l.Direction != req.Direction {
			l = nil
		}
	default:
		return agentapi.Lease{}, fmt.Errorf("%w: name a leaseId or a port", ErrInvalid)
	}
	if l == nil {
		return agentapi.Lease{}, ErrNotFound
	}
	reason := req.Reason
	if reason == "" {
		reason = "released"
	}
	m.endLocked(l, agentapi.LeaseReleased, reason)
	out, gen := *l, m.changes
	m.mu.Unlock()
	err := m.persist(gen)
	m.mu.Lock()
	return out, err
}

func (m *Manager) endLocked(l *agentapi.Lease, status, reason string) {
	now := m.now().UTC()
	l.Status, l.ReleasedAt, l.ReleaseReason = status, &now, reason
	delete(m.active, l.Port)
	m.changes++
	m.history = append(m.history, *l)
	if len(m.history) > historyLimit {
		m.history = m.history[len(m.history)-historyLimit:]
	}
}

// reclaimLocked ends the leases past their expiry; it reports whether any.
func (m *Manager) reclaimLocked() bool {
	now := m.now()
	ended := false
	for _, l := range m.active {
		if !now.Before(l.ExpiresAt) {
			m.endLocked(l, agentapi.LeaseExpired, "expired without release")
			ended = true
		}
	}
	return ended
}

// Reclaim ends expired leases now.
func (m *Manager) Reclaim() error {
	m.mu.Lock()
	ended, gen := m.reclaimLocked(), m.changes
	m.mu.Unlock()
	if ended {
		return m.persist(gen)
	}
	return nil
}

// Run reclaims expired leases every second until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Reclaim()
		}
	}
}

// List returns active and recently ended leases, newest first, filtered
// by status and direction when given.
func (m *Manager) List(status, direction string) agentapi.LeaseList {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reclaimLocked()
	out := agentapi.LeaseList{PortMin: m.min, PortMax: m.max, Leases: []agentapi.Lease{}}
	match := func(l agentapi.Lease) bool {
		return (status == "" || l.Status == status) && (direction == "" || l.Direction == direction)
	}
	for _, l := range m.active {
		if match(*l) {
			out.Leases = append(out.Leases, *l)
		}
	}
	for _, l := range m.history {
		if match(l) {
			out.Leases = append(out.Leases, l)
		}
	}
	sort.Slice(out.Leases, func(i, j int) bool { return out.Leases[i].CreatedAt.After(out.Leases[j].CreatedAt) })
	return out
}

// Active counts the active leases.
func (m *Manager) Active() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.active)
}

// persist returns once the file holds every change up to gen. Whoever
// finds no write under way writes the current state (covering everyone who
// waits); a crash of the agent keeps the file, which is replaced atomically.
func (m *Manager) persist(gen uint64) error {
	m.smu.Lock()
	defer m.smu.Unlock()
	for m.saved < gen {
		if m.flushing {
			m.flushed.Wait()
			continue
		}
		m.flushing = true
		m.smu.Unlock()
		m.mu.Lock()
		list := make([]agentapi.Lease, 0, len(m.active))
		for _, l := range m.active {
			list = append(list, *l)
		}
		upto := m.changes
		m.mu.Unlock()
		err := writeAtomic(m.path, list)
		m.smu.Lock()
		m.flushing = false
		if err == nil && upto > m.saved {
			m.saved = upto
		}
		m.flushed.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600, false)
}
