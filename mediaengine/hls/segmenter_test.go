package hls

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
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
	vp8 := []*media.Track{{ID: 0, Codec: media.CodecVP8, ClockRate: 90000}, {ID: 1, Codec: media.CodecOpus, ClockRate: 48000, Channels: 2}}
	if got := codecs(vp8); got != "vp08.00.10.08,opus" {
		t.Fatalf("codecs of VP8 and Opus %q", got)
	}
	// MPEG-TS has no VP8: the segmenter refuses rather than serve sound
	// without its picture.
	if _, err := newTSWriter(vp8); !errors.Is(err, ErrNoTSVideo) {
		t.Fatalf("MPEG-TS of VP8: %v", err)
	}
}

// A publisher that starts again near zero after another is moved to start
// shiftGap after it; the frames handed out are copies, and a publisher
// already ahead is left alone.
func TestTimeShiftAcrossPublishers(t *testing.T) {
	var ts timeShift
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	first := []*media.Frame{{DTS: ms(10000), PTS: ms(10000)}, {DTS: ms(10040), PTS: ms(10080)}, {DTS: ms(28960), PTS: ms(28960)}}
	ts.start(first[0].DTS)
	for _, f := range first {
		if g := ts.frame(f); g != f {
			t.Fatal("the first publisher's frames were copied")
		}
	}
	second := &media.Frame{DTS: ms(10000), PTS: ms(10040)}
	ts.start(second.DTS)
	g := ts.frame(second)
	if g == second || second.DTS != ms(10000) {
		t.Fatal("a shared frame was changed in place")
	}
	if want := ms(28960) + shiftGap; g.DTS != want || g.PTS != want+ms(40) {
		t.Fatalf("second publisher's first frame at DTS %v PTS %v, want %v", g.DTS, g.PTS, want)
	}
	if g := ts.frame(&media.Frame{DTS: ms(10040)}); g.DTS != ms(28960)+shiftGap+ms(40) {
		t.Fatalf("second frame at %v", g.DTS)
	}
	ahead := &media.Frame{DTS: ms(60000)}
	ts.start(ahead.DTS)
	if g := ts.frame(ahead); g != ahead {
		t.Fatal("a publisher already ahead was shifted")
	}
}
