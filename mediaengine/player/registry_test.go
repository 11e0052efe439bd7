package player

import (
	"testing"

	"github.com/svcplatform/svc/mediaengine/media"
)

func TestRegistryFilterAndKick(t *testing.T) {
	r := NewRegistry()
	var left []ID
	r.OnLeave = func(p *Player) { left = append(left, p.ID) }
	kicked := map[string]bool{}
	add := func(name, stream, lease, ticket string) *Player {
		p := &Player{Path: media.Path{App: "live", Stream: stream}, Protocol: "http-flv", LeaseID: lease,
			Params: map[string]string{ParamTicket: ticket}}
		p.Kick = func() { kicked[name] = true; r.Remove(p) }
		r.Add(p)
		return p
	}
	a := add("a", "cam1", "L1", "T1")
	add("b", "cam1", "L1", "T2")
	add("c", "cam2", "L2", "T3")
	for _, tc := range []struct {
		f    Filter
		want int
	}{{Filter{}, 3}, {Filter{Stream: "cam1"}, 2}, {Filter{LeaseID: "L1", Ticket: "T2"}, 1}, {Filter{ID: a.ID}, 1}, {Filter{LeaseID: "nope"}, 0}} {
		if got := len(r.List(tc.f)); got != tc.want {
			t.Errorf("List(%+v) = %d, want %d", tc.f, got, tc.want)
		}
	}
	if n := r.Kick(Filter{LeaseID: "L1"}); n != 2 || !kicked["a"] || !kicked["b"] || kicked["c"] {
		t.Fatalf("kick by lease: %d, %v", n, kicked)
	}
	if r.Len() != 1 || len(left) != 2 {
		t.Fatalf("after kick: %d players, %d left", r.Len(), len(left))
	}
	r.Remove(a) // twice
	if len(left) != 2 {
		t.Fatal("removing twice reported twice")
	}
	if info := r.Infos(Filter{})[0]; info.Ticket != "T3" || info.Protocol != "http-flv" {
		t.Fatalf("info %+v", info)
	}
}
