package mediaengine

import (
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

func TestControlStreams(t *testing.T) {
	te := startEngine(t, nil)
	var list engineapi.StreamList
	testkit.Eventually(t, 5*time.Second, "the demo stream's rates", func() bool {
		te.control(t, "GET", engineapi.PathStreams, nil, &list)
		return len(list.Streams) == 1 && len(list.Streams[0].Tracks) == 2 && list.Streams[0].Tracks[0].FPS > 0
	})
	s := list.Streams[0]
	v, a := s.Tracks[0], s.Tracks[1]
	if s.App != "live" || s.Stream != "demo" || s.Origin != "file" || v.Codec != "H264" || v.Width != 640 || v.Height != 360 ||
		v.FPS < 20 || v.FPS > 30 || v.BitrateKbps <= 0 || a.Codec != "AAC" || a.SampleRate != 48000 || s.UptimeSec <= 0 {
		t.Fatalf("stream %+v", s)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{{"?app=live", 1}, {"?app=other", 0}, {"?stream=demo", 1}, {"?vhost=elsewhere", 0}} {
		var l engineapi.StreamList
		te.control(t, "GET", engineapi.PathStreams+tc.query, nil, &l)
		if len(l.Streams) != tc.want {
			t.Errorf("filter %s: %d streams, want %d", tc.query, len(l.Streams), tc.want)
		}
	}
	for _, tc := range []struct {
		body   any
		status int
		code   string
	}{
		{engineapi.CloseStreamRequest{App: "live", Stream: "nope"}, http.StatusNotFound, engineapi.CodeStreamNotFound},
		{map[string]any{"app": "live"}, http.StatusBadRequest, engineapi.CodeInvalidBody},
		{map[string]any{"app": "live", "stream": "demo", "typo": 1}, http.StatusBadRequest, engineapi.CodeInvalidBody},
	} {
		var e engineapi.Error
		if st := te.control(t, "POST", engineapi.PathStreamClose, tc.body, &e); st != tc.status || e.Code != tc.code {
			t.Errorf("close %v: %d %+v, want %d %s", tc.body, st, e, tc.status, tc.code)
		}
	}
	started := s.StartedAt
	var closed engineapi.StreamInfo
	if st := te.control(t, "POST", engineapi.PathStreamClose, engineapi.CloseStreamRequest{App: "live", Stream: "demo"}, &closed); st != http.StatusOK || closed.Stream != "demo" {
		t.Fatalf("close: %d %+v", st, closed)
	}
	// The demo source publishes again: a new stream.
	testkit.Eventually(t, 5*time.Second, "the demo stream to return", func() bool {
		te.control(t, "GET", engineapi.PathStreams, nil, &list)
		return len(list.Streams) == 1 && list.Streams[0].StartedAt.After(started)
	})
	var stats engineapi.Stats
	if te.control(t, "GET", engineapi.PathStats, nil, &stats); stats.Streams != 1 || stats.FramesIn == 0 || stats.MediaServerID != "n1" || stats.Goroutines == 0 {
		t.Fatalf("stats %+v", stats)
	}
}
