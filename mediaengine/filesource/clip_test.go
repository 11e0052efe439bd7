package filesource

import (
	"context"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

func TestLoadBuiltinClip(t *testing.T) {
	c, err := LoadFile(Builtin)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tracks) != 2 || c.Tracks[0].Codec != media.CodecH264 || c.Tracks[1].Codec != media.CodecAAC {
		t.Fatalf("tracks %v", c.Tracks)
	}
	if c.Tracks[1].SampleRate != 48000 || c.Tracks[1].Channels != 2 {
		t.Fatalf("audio %v", c.Tracks[1])
	}
	counts := map[media.Kind]int{}
	keys := 0
	for i, f := range c.Frames {
		counts[f.Track.Kind()]++
		if f.Keyframe {
			keys++
		}
		if i > 0 && f.DTS < c.Frames[i-1].DTS {
			t.Fatalf("frame %d goes back in time", i)
		}
		if f.PTS < f.DTS {
			t.Fatalf("frame %d has PTS %v before DTS %v", i, f.PTS, f.DTS)
		}
	}
	// ffprobe counts 250 video and 470 audio packets in demo.ts.
	if counts[media.KindVideo] != 250 || counts[media.KindAudio] < 465 || keys != 5 {
		t.Fatalf("frames %v, keyframes %d", counts, keys)
	}
	// The loop follows the video: 250 frames of 40 ms, so the next loop's
	// first frame comes exactly one frame after this loop's last, and no
	// audio frame of this loop reaches into the next.
	if c.Duration != 10*time.Second {
		t.Fatalf("duration %v, want the video's 10 s", c.Duration)
	}
	var lastVideo time.Duration
	for _, f := range c.Frames {
		if f.DTS >= c.Duration {
			t.Fatalf("a %s frame at %v is past the loop's %v", f.Track.Kind(), f.DTS, c.Duration)
		}
		if f.Track.Kind() == media.KindVideo {
			lastVideo = f.DTS
		}
	}
	if gap := c.Duration - lastVideo; gap != 40*time.Millisecond {
		t.Fatalf("the loop point is %v after the last video frame, want one frame (40 ms)", gap)
	}
	if !c.Frames[0].Keyframe {
		t.Fatal("the clip does not start at a keyframe")
	}
}

type frameLog struct{ frames []*media.Frame }

func (l *frameLog) WriteFrame(f *media.Frame) error {
	l.frames = append(l.frames, f)
	return nil
}

func TestPlayLoopsWithContinuingTimestamps(t *testing.T) {
	full, err := LoadFile(Builtin)
	if err != nil {
		t.Fatal(err)
	}
	// A 0.2 s slice of the clip played 3 times must take about 0.6 s.
	c := &Clip{Tracks: full.Tracks, Duration: 200 * time.Millisecond}
	for _, f := range full.Frames {
		if f.DTS < 200*time.Millisecond {
			c.Frames = append(c.Frames, f)
		}
	}
	var log frameLog
	start := time.Now()
	if err := Play(context.Background(), c, &log, 3); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 380*time.Millisecond || el > 900*time.Millisecond {
		t.Fatalf("3 loops of 0.2 s took %v", el)
	}
	last := map[*media.Track]time.Duration{}
	for _, f := range log.frames {
		if d, ok := last[f.Track]; ok && f.DTS <= d {
			t.Fatalf("DTS %v after %v on %s", f.DTS, d, f.Track)
		}
		last[f.Track] = f.DTS
	}
	if len(log.frames) != 3*len(c.Frames) {
		t.Fatalf("%d frames, want %d", len(log.frames), 3*len(c.Frames))
	}
}
