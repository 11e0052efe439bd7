package player

import (
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/svcplatform/svc/shared/engineapi"
)

// Registry holds the connected players.
type Registry struct {
	// OnLeave, when set, is called (outside the lock) for each player
	// removed, for the final flow report.
	OnLeave func(p *Player)

	seq atomic.Uint64
	mu  sync.Mutex
	all map[ID]*Player
}

// NewRegistry makes an empty registry.
func NewRegistry() *Registry { return &Registry{all: map[ID]*Player{}} }

// Add registers p and gives it an id.
func (r *Registry) Add(p *Player) {
	p.ID = ID(strconv.FormatUint(r.seq.Add(1), 10))
	r.mu.Lock()
	r.all[p.ID] = p
	r.mu.Unlock()
}

// Remove unregisters p; removing twice is harmless.
func (r *Registry) Remove(p *Player) {
	r.mu.Lock()
	_, ok := r.all[p.ID]
	delete(r.all, p.ID)
	r.mu.Unlock()
	if ok && r.OnLeave != nil {
		r.OnLeave(p)
	}
}

// Len is the number of players.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// Filter selects players; empty fields match everything.
type Filter struct {
	App, Stream, Protocol, LeaseID, Ticket string
	ID                                     ID
}

func (f Filter) match(p *Player) bool {
	return (f.ID == "" || p.ID == f.ID) && (f.App == "" || p.Path.App == f.App) &&
		(f.Stream == "" || p.Path.Stream == f.Stream) && (f.Protocol == "" || p.Protocol == f.Protocol) &&
		(f.LeaseID == "" || p.LeaseID == f.LeaseID) && (f.Ticket == "" || p.Ticket() == f.Ticket)
}

// List returns the players matching f, oldest first.
func (r *Registry) List(f Filter) []*Player {
	r.mu.Lock()
	var out []*Player
	for _, p := range r.all {
		if f.match(p) {
			out = append(out, p)
		}
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.ParseUint(string(out[i].ID), 10, 64)
		b, _ := strconv.ParseUint(string(out[j].ID), 10, 64)
		return a < b
	})
	return out
}

// Infos describes the players matching f.
func (r *Registry) Infos(f Filter) []engineapi.PlayerInfo {
	ps := r.List(f)
	out := make([]engineapi.PlayerInfo, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Info())
	}
	return out
}

// Kick disconnects the players matching f and returns how many.
func (r *Registry) Kick(f Filter) int {
	ps := r.List(f)
	for _, p := range ps {
		p.Kick()
	}
	return len(ps)
}
