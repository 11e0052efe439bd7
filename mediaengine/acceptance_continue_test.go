package mediaengine

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// decodedFrames is what an ffmpeg player decoded: each video frame's PTS
// and when its line came out.
type decodedFrames struct {
	mu     sync.Mutex
	pts    []float64
	at     []time.Time
	done   chan struct{}
	stderr strings.Builder
}

func (d *decodedFrames) after(t time.Time) (n int, first, last float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, at := range d.at {
		if at.After(t) {
			if n == 0 {
				first = d.pts[i]
			}
			last = d.pts[i]
			n++
		}
	}
	return n, first, last
}

// decode runs one ffmpeg player that decodes the video of url and prints a
// line per frame (framecrc), as a long-lived player would keep its one
// connection.
func decode(t *testing.T, url string) *decodedFrames {
	t.Helper()
	peers.Require(t, "ffmpeg")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := peers.Command(ctx, "ffmpeg", "-nostdin", "-v", "error", "-rw_timeout", "60000000", "-i", url, "-map", "0:v:0", "-f", "framecrc", "-")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &decodedFrames{done: make(chan struct{})}
	cmd.Stderr = &d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-d.done })
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// "0,      12345,      12345,     3600,    10421, 0x12345678"
			f := strings.Split(sc.Text(), ",")
			if strings.HasPrefix(sc.Text(), "#") || len(f) < 6 {
				continue
			}
			pts, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
			if err != nil {
				continue
			}
			d.mu.Lock()
			d.pts, d.at = append(d.pts, pts), append(d.at, time.Now())
			d.mu.Unlock()
		}
		cmd.Wait()
	}()
	return d
}

// TestAcceptancePlayersRideThroughSourceOutage stops the camera for 5 s:
// ffmpeg players of HTTP-FLV and HTTP-fMP4 started before the outage
// decode frames after it on the same connection, with timestamps that go
// on instead of starting again, while a new player could also join.
func TestAcceptancePlayersRideThroughSourceOutage(t *testing.T) {
	t.Parallel()
	g := peers.StartGStreamer(t)
	te := startEngine(t, noDemo)
	if te.cfg.ContinueGrace.D() < 10*time.Second {
		t.Fatalf("the default continueGrace %s does not cover a 5 s outage and the reconnect", te.cfg.ContinueGrace.D())
	}
	addProxy(t, te, engineapi.AddProxyRequest{ID: "cam", URL: g.URL("", "h264"), App: "cam", Stream: "ride", Transport: "tcp",
		Retry: engineapi.RetryPolicy{InitialBackoff: engineapi.Duration(500 * time.Millisecond), MaxBackoff: engineapi.Duration(time.Second)}})
	waitStreamReady(t, te, "cam", "ride", 30*time.Second)
	players := map[string]*decodedFrames{
		"http-flv":  decode(t, te.mediaURL("/cam/ride.live.flv")),
		"http-fmp4": decode(t, te.mediaURL("/cam/ride.live.mp4")),
	}
	for name, d := range players {
		testkit.Eventually(t, 30*time.Second, name+" decoding before the outage", func() bool { n, _, _ := d.after(time.Time{}); return n >= 25 })
	}
	_, _, lastBefore := players["http-flv"].after(time.Time{})

	g.Stop()
	time.Sleep(5 * time.Second)
	g.Start()
	back := time.Now()
	waitStreamReady(t, te, "cam", "ride", 30*time.Second)
	for name, d := range players {
		testkit.Eventually(t, 30*time.Second, name+" frames after the outage on the same connection", func() bool {
			n, _, _ := d.after(back)
			return n >= 50
		})
		select {
		case <-d.done:
			t.Fatalf("%s: ffmpeg ended: %s", name, d.stderr.String())
		default:
		}
		d.mu.Lock()
		for i := 1; i < len(d.pts); i++ {
			if d.pts[i] < d.pts[i-1] {
				t.Errorf("%s: PTS went back from %.0f to %.0f (frame %d)", name, d.pts[i-1], d.pts[i], i)
				break
			}
		}
		d.mu.Unlock()
		n, first, last := d.after(back)
		t.Logf("%s: %d frames decoded after the outage, PTS %.0f..%.0f", name, n, first, last)
	}
	if n, first, _ := players["http-flv"].after(back); n == 0 || first <= lastBefore {
		t.Fatalf("HTTP-FLV timestamps after the outage start at %.0f, not after %.0f", first, lastBefore)
	}
}
