package hls

import (
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
)

// TestMediaPlaylistAcrossPublishers renders the playlist of a segmenter
// whose publisher changed: the new generation's first segment carries a
// discontinuity and its own initialisation segment, and once the old
// segments leave the window the discontinuity sequence counts the one that
// scrolled out.
func TestMediaPlaylistAcrossPublishers(t *testing.T) {
	s := &Segmenter{format: "fmp4", keep: 10, inits: map[int][]byte{1: {1}, 2: {2}}, updated: make(chan struct{})}
	for i, gen := range []int{1, 1, 2, 2} {
		s.add(gen, []byte{byte(i)}, 2*time.Second+time.Duration(i)*100*time.Millisecond)
	}
	pl := string(s.mediaPlaylist(4, ""))
	for _, want := range []string{"#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-TARGETDURATION:3", `#EXT-X-MAP:URI="init-1.mp4"`,
		"#EXT-X-DISCONTINUITY\n", `#EXT-X-MAP:URI="init-2.mp4"`, "0.m4s", "3.m4s"} {
		if !strings.Contains(pl, want) {
			t.Errorf("playlist lacks %q:\n%s", want, pl)
		}
	}
	pl = string(s.mediaPlaylist(2, "?vhost=v1"))
	for _, want := range []string{"#EXT-X-MEDIA-SEQUENCE:2", "#EXT-X-DISCONTINUITY-SEQUENCE:1", `init-2.mp4?vhost=v1`, "2.m4s?vhost=v1"} {
		if !strings.Contains(pl, want) {
			t.Errorf("window of 2 lacks %q:\n%s", want, pl)
		}
	}
	if strings.Contains(pl, "#EXT-X-DISCONTINUITY\n") {
		t.Errorf("a discontinuity at the window's start is carried by the sequence, not a tag:\n%s", pl)
	}
}

func TestCodecsAttribute(t *testing.T) {
	if got := codecs(mediatest.Tracks()); got != "avc1.64001E,mp4a.40.2" {
		t.Fatalf("codecs %q", got)
	}
}
