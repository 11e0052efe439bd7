package mediaengine

import (
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// TestSlowReaderDoesNotDelayOthers connects a player that never reads
// (with a tiny receive buffer, so its socket fills at once) next to a
// normal player, and checks that the normal player's frames keep arriving
// in real time while the slow one's drops are counted in the player list.
func TestSlowReaderDoesNotDelayOthers(t *testing.T) {
	te := startEngine(t, func(c *engineapi.Config) { c.ReaderQueueFrames = 16 })
	fast := openFLV(t, te.mediaURL("/live/demo.live.flv?svc_ticket=fast"))
	slow := stalledFLVPlayer(t, te, "/live/demo.live.flv?svc_ticket=slow", "slow")
	fast.mu.Lock()
	before := len(fast.lag)
	fast.mu.Unlock()
	time.Sleep(3 * time.Second) // keep the slow reader stuck while the fast one plays on
	fast.mu.Lock()
	lags := append([]time.Duration(nil), fast.lag...)
	fast.mu.Unlock()
	if got := len(lags) - before; got < 60 {
		t.Fatalf("the fast player got %d video frames in 3 s while the slow one stalled, want about 75", got)
	}
	// The first frames come from the GOP cache at once; after those the
	// arrival times follow the timestamps. Lag may only shrink (cache) or
	// stay flat; any growth means the fast player was held up.
	minLag, worst := lags[0], time.Duration(0)
	for _, l := range lags {
		minLag = min(minLag, l)
	}
	for _, l := range lags[len(lags)/2:] {
		worst = max(worst, l-minLag)
	}
	// A machine shared with parallel builds adds scheduling jitter; being
	// held up by the stalled player would add seconds.
	if worst > time.Second {
		t.Fatalf("the fast player's frames were late by up to %v while a slow player stalled", worst)
	}
	var l engineapi.PlayerList
	te.control(t, "GET", engineapi.PathPlayers+"?ticket=fast", nil, &l)
	if len(l.Players) != 1 || l.Players[0].Dropped != 0 {
		t.Fatalf("fast player %+v", l.Players)
	}
	var stats engineapi.Stats
	if te.control(t, "GET", engineapi.PathStats, nil, &stats); stats.DroppedFrames < slow.Dropped {
		t.Fatalf("engine drops %d < the slow player's %d", stats.DroppedFrames, slow.Dropped)
	}
	t.Logf("slow player dropped %d frames after %d bytes; fast player's worst extra lag %v", slow.Dropped, slow.Bytes, worst)
}
