package mediaengine

import (
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

func TestControlPlayersListAndKick(t *testing.T) {
	te := startEngine(t, nil)
	a := openFLV(t, te.mediaURL("/live/demo.live.flv?svc_ticket=T1"))
	b := openFLV(t, te.mediaURL("/live/demo.live.flv?svc_ticket=T2"))
	c := openFLV(t, te.mediaURL("/live/demo.live.mp4?svc_ticket=T2"))
	if a.status != 200 || b.status != 200 || c.status != 200 {
		t.Fatalf("statuses %d %d %d", a.status, b.status, c.status)
	}
	var list engineapi.PlayerList
	testkit.Eventually(t, 5*time.Second, "three players with traffic", func() bool {
		te.control(t, "GET", engineapi.PathPlayers, nil, &list)
		return len(list.Players) == 3 && list.Players[0].Bytes > 0 && list.Players[0].Frames > 0
	})
	p := list.Players[0]
	if p.Protocol != "http-flv" || p.Ticket != "T1" || p.App != "live" || p.Stream != "demo" || p.RemoteAddr == "" || p.StartedAt.IsZero() {
		t.Fatalf("player %+v", p)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{{"?ticket=T2", 2}, {"?protocol=http-fmp4", 1}, {"?stream=other", 0}} {
		var l engineapi.PlayerList
		te.control(t, "GET", engineapi.PathPlayers+tc.query, nil, &l)
		if len(l.Players) != tc.want {
			t.Errorf("filter %s: %d players, want %d", tc.query, len(l.Players), tc.want)
		}
	}
	var res engineapi.KickResult
	if st := te.control(t, "POST", engineapi.PathPlayersKick, engineapi.KickRequest{Ticket: "T2"}, &res); st != 200 || res.Kicked != 2 {
		t.Fatalf("kick by ticket: %d %+v", st, res)
	}
	if !b.ended(3*time.Second) || !c.ended(3*time.Second) || a.ended(100*time.Millisecond) {
		t.Fatal("kick by ticket did not end exactly the ticket's connections")
	}
	if st := te.control(t, "POST", engineapi.PathPlayersKick, engineapi.KickRequest{PlayerID: p.ID}, &res); st != 200 || res.Kicked != 1 {
		t.Fatalf("kick by id: %d %+v", st, res)
	}
	if !a.ended(3 * time.Second) {
		t.Fatal("the kicked player is still connected")
	}
	var e engineapi.Error
	if st := te.control(t, "POST", engineapi.PathPlayersKick, engineapi.KickRequest{PlayerID: "999"}, &e); st != http.StatusNotFound {
		t.Fatalf("kick of an unknown id: %d", st)
	}
	if st := te.control(t, "POST", engineapi.PathPlayersKick, engineapi.KickRequest{}, &e); st != http.StatusBadRequest {
		t.Fatalf("kick of nobody: %d", st)
	}
	testkit.Eventually(t, 3*time.Second, "the kicked players to leave the list", func() bool {
		te.control(t, "GET", engineapi.PathPlayers, nil, &list)
		return len(list.Players) == 0
	})
}
